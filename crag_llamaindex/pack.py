"""CRAGPack: the llama-packs shape (`get_modules()`, `run(query)`), deprecated as LlamaIndex deprecated packs."""

from __future__ import annotations

import warnings
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.response.schema import RESPONSE_TYPE

from .query_engine import CRAGQueryEngine
from .workflow import CRAGWorkflow

DEPRECATION = ("CRAGPack is deprecated since 0.2.0, as LlamaIndex deprecated llama-packs, and is removed in 0.3.0: "
               "use CRAGWorkflow(index=...) (or CRAGQueryEngine.from_index(...)); CRAGPack.get_modules()['workflow'] "
               "is that workflow")


class CRAGPack:
    """Corrective RAG over your index or retriever, in the form LlamaIndex users knew from llama-packs.

    Deprecated: LlamaIndex deprecated packs in 2026. Use `CRAGWorkflow` (the same steps, as a workflow you
    can nest in your own) or `CRAGQueryEngine`; this pack is a thin shell around them and keeps working.
    `run(query)` answers synchronously (it works inside Jupyter), `arun(query)` runs the workflow; both
    give the same knowledge. `run(query, similarity_top_k=3)` retrieves that many nodes for this call
    (for a pack built from an index).
    """

    def __init__(self, index_or_retriever: Any, *, similarity_top_k: int = 10, **settings: Any) -> None:
        warnings.warn(DEPRECATION, DeprecationWarning, stacklevel=2)
        self.index = None
        if isinstance(index_or_retriever, BaseRetriever):
            self.workflow = CRAGWorkflow(index_or_retriever, **settings)
        elif hasattr(index_or_retriever, "as_retriever"):
            self.index = index_or_retriever
            self.workflow = CRAGWorkflow(index=index_or_retriever, similarity_top_k=similarity_top_k, **settings)
        else:
            raise TypeError(f"CRAGPack takes an index or a retriever, got {type(index_or_retriever).__name__}")

    def get_modules(self) -> dict[str, Any]:
        """The parts: workflow, query engine, retriever, postprocessor and corrector."""
        engine = self.workflow.engine
        return {"workflow": self.workflow, "query_engine": engine, "retriever": engine.retriever,
                "postprocessor": engine.crag, "corrector": engine.crag.corrector}

    def _engine(self, similarity_top_k: int | None) -> CRAGQueryEngine:
        engine = self.workflow.engine
        if similarity_top_k is None:
            return engine
        if self.index is None:
            raise TypeError("similarity_top_k applies to a CRAGPack built from an index; this one was given a "
                            "retriever: set its top k on the retriever")
        return engine.with_retriever(self.index.as_retriever(similarity_top_k=similarity_top_k))

    def run(self, query: str, *, similarity_top_k: int | None = None) -> RESPONSE_TYPE:
        """Answer `query` synchronously (works inside Jupyter)."""
        return self._engine(similarity_top_k).query(query)

    async def arun(self, query: str, *, similarity_top_k: int | None = None) -> RESPONSE_TYPE:
        """Answer `query` through the workflow (through the query engine when `similarity_top_k` is given)."""
        if similarity_top_k is None:
            return await self.workflow.run(query=query)
        return await self._engine(similarity_top_k).aquery(query)
