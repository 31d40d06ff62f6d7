"""CRAGPack: the llama-packs shape (`get_modules()`, `run(query)`) around crag's query engine and workflow."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.response.schema import RESPONSE_TYPE

from .workflow import CRAGWorkflow


class CRAGPack:
    """Corrective RAG over your index or retriever, in the form LlamaIndex users know from llama-packs.

    Unlike llama-index-packs-corrective-rag, it builds nothing of its own: it takes your index (or any
    retriever), any LLM (`llm=`, else `Settings.llm`, else offline keyword rewrites), crag's evaluators
    and any web provider; constructing it needs no event loop. `run(query)` answers synchronously (it
    works inside Jupyter), `arun(query)` runs the `CRAGWorkflow`; both give the same knowledge.
    """

    def __init__(self, index_or_retriever: Any, *, similarity_top_k: int = 10, **settings: Any) -> None:
        if isinstance(index_or_retriever, BaseRetriever):
            self.workflow = CRAGWorkflow(index_or_retriever, **settings)
        elif hasattr(index_or_retriever, "as_retriever"):
            self.workflow = CRAGWorkflow(index=index_or_retriever, similarity_top_k=similarity_top_k, **settings)
        else:
            raise TypeError(f"CRAGPack takes an index or a retriever, got {type(index_or_retriever).__name__}")

    def get_modules(self) -> dict[str, Any]:
        """The parts: workflow, query engine, retriever, postprocessor and corrector."""
        engine = self.workflow.engine
        return {"workflow": self.workflow, "query_engine": engine, "retriever": engine.retriever,
                "postprocessor": engine.crag, "corrector": engine.crag.corrector}

    def run(self, query: str, **kwargs: Any) -> RESPONSE_TYPE:
        """Answer `query` synchronously (works inside Jupyter)."""
        return self.workflow.engine.query(query, **kwargs)

    async def arun(self, query: str) -> RESPONSE_TYPE:
        """Answer `query` through the workflow."""
        return await self.workflow.run(query=query)
