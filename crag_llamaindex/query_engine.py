"""CRAGQueryEngine: retrieve → CRAG → your synthesizer, with CRAG's verdict in `response.metadata`."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator
from typing import Any

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.response.schema import (
    RESPONSE_TYPE,
    AsyncStreamingResponse,
    Response,
    StreamingResponse,
)
from llama_index.core.callbacks import CallbackManager
from llama_index.core.prompts.mixin import PromptMixinType
from llama_index.core.response_synthesizers import BaseSynthesizer, get_response_synthesizer
from llama_index.core.schema import NodeWithScore, QueryBundle

from crag_shared import CorrectionResult
from crag_shared.records import NO_KNOWLEDGE_ANSWER, result_metadata

from .postprocessor import CRAGPostprocessor


class CRAGQueryEngine(BaseQueryEngine):
    """Wraps any retriever (or index) with CRAG before response synthesis.

    `response.metadata["crag"]` holds the action, the scores, the thresholds, the rewritten query, the
    web URLs, the strips and the full trace; `source_nodes` are the knowledge nodes with provenance.
    When CRAG keeps no knowledge at all, the engine answers `no_knowledge_answer` instead of letting
    the LLM answer from nothing. `query`, `aquery` and streaming (`streaming=True`) all work.
    """

    def __init__(self, retriever: BaseRetriever, *, crag: CRAGPostprocessor | None = None,
                 response_synthesizer: BaseSynthesizer | None = None, llm: Any | None = None,
                 streaming: bool = False, no_knowledge_answer: str = NO_KNOWLEDGE_ANSWER,
                 callback_manager: CallbackManager | None = None, **crag_settings: Any) -> None:
        if crag is not None and crag_settings:
            raise ValueError("pass either crag=CRAGPostprocessor(...) or CRAG settings, not both")
        self._retriever = retriever
        self._crag = crag or CRAGPostprocessor(llm=llm, **crag_settings)
        self._synthesizer = response_synthesizer or get_response_synthesizer(llm=llm, streaming=streaming)
        self._streaming = streaming
        self._no_knowledge_answer = no_knowledge_answer
        super().__init__(callback_manager=callback_manager or CallbackManager())

    @classmethod
    def from_index(cls, index: Any, *, similarity_top_k: int = 10, **kwargs: Any) -> "CRAGQueryEngine":
        """CRAG over `index.as_retriever(similarity_top_k=...)`; the paper scores the top 10."""
        return cls(index.as_retriever(similarity_top_k=similarity_top_k), **kwargs)

    @property
    def crag(self) -> CRAGPostprocessor:
        return self._crag

    @property
    def retriever(self) -> BaseRetriever:
        return self._retriever

    def _get_prompt_modules(self) -> PromptMixinType:
        return {"crag": self._crag, "response_synthesizer": self._synthesizer}

    def retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._crag.correct(self._retriever.retrieve(query_bundle), query_bundle)[0]

    def _query(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        nodes, result = self._crag.correct(self._retriever.retrieve(query_bundle), query_bundle)
        response = self._synthesizer.synthesize(query_bundle, nodes) if nodes else self._no_knowledge(nodes, False)
        return _with_crag(response, result)

    async def _aquery(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        nodes, result = await self._crag.acorrect(await self._retriever.aretrieve(query_bundle), query_bundle)
        return await self.arespond(query_bundle, nodes, result)

    async def arespond(self, query_bundle: QueryBundle, nodes: list[NodeWithScore], result: CorrectionResult
                       ) -> RESPONSE_TYPE:
        """The answer from CRAG's knowledge nodes (or the no-knowledge answer), with CRAG's verdict in
        `response.metadata["crag"]` (also the last step of `CRAGWorkflow`)."""
        if nodes:
            response = await self._synthesizer.asynthesize(query_bundle, nodes)
        else:
            response = self._no_knowledge(nodes, True)
        return _with_crag(response, result)

    def _no_knowledge(self, nodes: list[NodeWithScore], is_async: bool) -> RESPONSE_TYPE:
        text = self._no_knowledge_answer
        if not self._streaming:
            return Response(text, source_nodes=nodes)
        if is_async:
            async def agen() -> AsyncGenerator[str, None]:
                yield text

            return AsyncStreamingResponse(response_gen=agen(), source_nodes=nodes)

        def gen() -> Generator[str, None, None]:
            yield text

        return StreamingResponse(response_gen=gen(), source_nodes=nodes)


def _with_crag(response: RESPONSE_TYPE, result: CorrectionResult) -> RESPONSE_TYPE:
    response.metadata = {**(response.metadata or {}), "crag": result_metadata(result)}
    return response
