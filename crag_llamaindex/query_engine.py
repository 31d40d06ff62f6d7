"""CRAGQueryEngine: retrieve → CRAG → your synthesizer, with CRAG's verdict in `response.metadata`."""

from __future__ import annotations

import copy
import inspect
from collections.abc import AsyncGenerator, Generator, Sequence
from dataclasses import fields
from typing import Any, Literal

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.response.schema import (
    RESPONSE_TYPE,
    AsyncStreamingResponse,
    Response,
    StreamingResponse,
)
from llama_index.core.callbacks import CallbackManager
from llama_index.core.llms import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.prompts import BasePromptTemplate, PromptTemplate
from llama_index.core.prompts.mixin import PromptDictType, PromptMixin, PromptMixinType
from llama_index.core.response_synthesizers import BaseSynthesizer, get_response_synthesizer
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.settings import Settings

from crag_shared.adapter import (
    NO_CONTEXT_INSTRUCTION,
    NO_KNOWLEDGE_ANSWER,
    CorrectionResult,
    CRAGConfig,
    result_metadata,
)

from .compose import record_verdict
from .postprocessor import CRAGPostprocessor

__all__ = ["CRAGQueryEngine", "OnAbstain"]

#: The prompt of `on_abstain="llm"`: the question alone, and the instruction not to guess.
NO_CONTEXT_PROMPT = PromptTemplate(f"{NO_CONTEXT_INSTRUCTION}\nQuestion: {{query_str}}\nAnswer: ")
OnAbstain = Literal["answer", "llm"]


class CRAGQueryEngine(BaseQueryEngine):
    """Wraps any retriever (or index) with CRAG before response synthesis.

    `response.metadata["crag"]` holds the action, the scores, the thresholds, the rewritten query, the
    web URLs, the strips, whether CRAG abstained and why, and the full trace; `source_nodes` are the
    knowledge nodes with provenance. When CRAG abstains (no knowledge at all: retrieval judged Incorrect
    with no web knowledge, or an empty query), the engine answers `no_knowledge_answer` without calling
    the LLM; `on_abstain="llm"` asks the LLM instead with `no_context_prompt` (the question alone, told
    not to guess; a prompt of this engine's, see `get_prompts()`). `query`, `aquery` and streaming
    (`streaming=True`) all work. `node_postprocessors` run on the retrieved nodes before CRAG judges
    them, as in `RetrieverQueryEngine(node_postprocessors=[*yours, crag])`.
    """

    def __init__(self, retriever: BaseRetriever, *, crag: CRAGPostprocessor | None = None,
                 response_synthesizer: BaseSynthesizer | None = None, llm: LLM | None = None,
                 streaming: bool = False, no_knowledge_answer: str = NO_KNOWLEDGE_ANSWER,
                 on_abstain: OnAbstain = "answer", no_context_prompt: BasePromptTemplate | str | None = None,
                 node_postprocessors: Sequence[BaseNodePostprocessor] = (),
                 callback_manager: CallbackManager | None = None, **crag_settings: Any) -> None:
        if crag is not None and crag_settings:
            raise ValueError("pass either crag=CRAGPostprocessor(...) or CRAG settings, not both")
        if on_abstain not in ("answer", "llm"):
            raise ValueError(f"on_abstain must be 'answer' (no_knowledge_answer, no LLM call) or 'llm', "
                             f"got {on_abstain!r}")
        if not isinstance(no_knowledge_answer, str):
            raise TypeError(f"no_knowledge_answer must be a string, got {type(no_knowledge_answer).__name__}")
        for postprocessor in node_postprocessors:
            if not isinstance(postprocessor, BaseNodePostprocessor):
                raise TypeError(f"node_postprocessors must be LlamaIndex node postprocessors, got "
                                f"{type(postprocessor).__name__}")
        self._retriever = retriever
        self._postprocessors = list(node_postprocessors)
        self._crag = crag or CRAGPostprocessor(llm=llm, **crag_settings)
        self._synthesizer = response_synthesizer or get_response_synthesizer(llm=llm, streaming=streaming)
        self._llm = llm
        self._streaming = streaming
        self._no_knowledge_answer = no_knowledge_answer
        self._on_abstain = on_abstain
        self._no_context_prompt = _prompt(no_context_prompt or NO_CONTEXT_PROMPT)
        super().__init__(callback_manager=callback_manager or CallbackManager())

    @classmethod
    def from_index(cls, index: Any, *, similarity_top_k: int = 10, **kwargs: Any) -> "CRAGQueryEngine":
        """CRAG over `index.as_retriever(similarity_top_k=..., **options)`; the paper scores the top 10.
        Keywords this engine and CRAG take are theirs; the others are the retriever's (`filters`,
        `vector_store_query_mode`, `alpha`...), as `index.as_query_engine` passes them on."""
        ours = (set(inspect.signature(cls.__init__).parameters) | set(CRAGPostprocessor.model_fields)
                | set(inspect.signature(CRAGPostprocessor.__init__).parameters) | {f.name for f in fields(CRAGConfig)})
        options = {name: kwargs.pop(name) for name in list(kwargs) if name not in ours}
        return cls(index.as_retriever(similarity_top_k=similarity_top_k, **options), **kwargs)

    def with_retriever(self, retriever: BaseRetriever) -> "CRAGQueryEngine":
        """This engine over another retriever: the same CRAG postprocessor, synthesizer and answers."""
        engine = copy.copy(self)
        engine._retriever = retriever
        return engine

    @property
    def crag(self) -> CRAGPostprocessor:
        """The `CRAGPostprocessor` this engine corrects with."""
        return self._crag

    @property
    def retriever(self) -> BaseRetriever:
        """The retriever this engine corrects."""
        return self._retriever

    def _get_prompts(self) -> PromptDictType:
        return {"no_context_prompt": self._no_context_prompt}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        if "no_context_prompt" in prompts:
            self._no_context_prompt = _prompt(prompts["no_context_prompt"])

    def _get_prompt_modules(self) -> PromptMixinType:
        return {"crag": self._crag, "response_synthesizer": self._synthesizer,
                **{f"node_postprocessor_{i}": p for i, p in enumerate(self._postprocessors)
                   if isinstance(p, PromptMixin)}}

    def retrieved(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """The retriever's nodes after `node_postprocessors`: what CRAG judges."""
        nodes = self._retriever.retrieve(query_bundle)
        for postprocessor in self._postprocessors:
            nodes = postprocessor.postprocess_nodes(nodes, query_bundle=query_bundle)
        return nodes

    async def aretrieved(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """The retriever's nodes after `node_postprocessors`: what CRAG judges (also `CRAGWorkflow`'s)."""
        nodes = await self._retriever.aretrieve(query_bundle)
        for postprocessor in self._postprocessors:
            nodes = await postprocessor.apostprocess_nodes(nodes, query_bundle=query_bundle)
        return nodes

    def retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """The retriever's nodes, corrected: the knowledge nodes CRAG keeps."""
        return self._crag.correct(self.retrieved(query_bundle), query_bundle)[0]

    def _query(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        nodes, result = self._crag.correct(self.retrieved(query_bundle), query_bundle)
        if result.abstained:
            return _with_crag(self, self._abstain(query_bundle), result)
        return _with_crag(self, self._synthesizer.synthesize(query_bundle, nodes), result)

    async def _aquery(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        nodes, result = await self._crag.acorrect(await self.aretrieved(query_bundle), query_bundle)
        return await self.arespond(query_bundle, nodes, result)

    async def arespond(self, query_bundle: QueryBundle, nodes: list[NodeWithScore], result: CorrectionResult
                       ) -> RESPONSE_TYPE:
        """The answer from CRAG's knowledge nodes (or, when CRAG abstained, the no-knowledge answer), with
        CRAG's verdict in `response.metadata["crag"]` (also the last step of `CRAGWorkflow`)."""
        if result.abstained:
            return _with_crag(self, await self._aabstain(query_bundle), result)
        return _with_crag(self, await self._synthesizer.asynthesize(query_bundle, nodes), result)

    def _abstain(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        if self._on_abstain == "answer":
            return self._fixed_answer(is_async=False)
        llm, query = self._llm or Settings.llm, query_bundle.query_str
        if self._streaming:
            return StreamingResponse(response_gen=llm.stream(self._no_context_prompt, query_str=query))
        return Response(llm.predict(self._no_context_prompt, query_str=query), source_nodes=[])

    async def _aabstain(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        if self._on_abstain == "answer":
            return self._fixed_answer(is_async=True)
        llm, query = self._llm or Settings.llm, query_bundle.query_str
        if self._streaming:
            return AsyncStreamingResponse(response_gen=await llm.astream(self._no_context_prompt, query_str=query))
        return Response(await llm.apredict(self._no_context_prompt, query_str=query), source_nodes=[])

    def _fixed_answer(self, is_async: bool) -> RESPONSE_TYPE:
        text = self._no_knowledge_answer
        if not self._streaming:
            return Response(text, source_nodes=[])
        if is_async:
            async def agen() -> AsyncGenerator[str, None]:
                yield text

            return AsyncStreamingResponse(response_gen=agen(), source_nodes=[])

        def gen() -> Generator[str, None, None]:
            yield text

        return StreamingResponse(response_gen=gen(), source_nodes=[])


def _prompt(prompt: BasePromptTemplate | str) -> BasePromptTemplate:
    """The no-context prompt as a template that takes `{query_str}`, checked where it is set."""
    template = PromptTemplate(prompt) if isinstance(prompt, str) else prompt
    if not isinstance(template, BasePromptTemplate):
        raise TypeError(f"no_context_prompt must be a prompt template or a string, got {type(prompt).__name__}")
    if "query_str" not in template.template_vars:
        raise ValueError("no_context_prompt must contain {query_str}")
    return template


def _with_crag(engine: CRAGQueryEngine, response: RESPONSE_TYPE, result: CorrectionResult) -> RESPONSE_TYPE:
    verdict = result_metadata(result)
    response.metadata = {**(response.metadata or {}), "crag": verdict}
    record_verdict(engine, {"query": result.query, **verdict})  # for a CRAGVerdicts query around this one
    return response
