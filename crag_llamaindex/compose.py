"""CRAG inside composed LlamaIndex apps: a sub-question engine or a router over CRAG engines keeps each
CRAG verdict, and does not ask the LLM to summarize abstentions into an answer.

LlamaIndex's `SubQuestionQueryEngine` and `RouterQueryEngine` keep only their sub-engines' answers and
source nodes: the verdicts in each sub-response's `metadata["crag"]` are dropped, and a multi-route router
summarizes whatever its routes answered, "I could not find reliable information" included. Two small
pieces, used with those classes as they are:

```python
engine = CRAGVerdicts(SubQuestionQueryEngine.from_defaults(query_engine_tools=tools, llm=llm,
                                                           response_synthesizer=AbstentionAware(llm=llm)))
response = engine.query("Compare A and B")
response.metadata["crag"]   # one verdict per CRAG engine that answered, in order: {"query", "action", ...}

router = CRAGVerdicts(RouterQueryEngine(selector=..., query_engine_tools=tools,
                                        summarizer=AbstentionAware(llm=llm)))
```
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.response.schema import RESPONSE_TYPE
from llama_index.core.callbacks import CallbackManager
from llama_index.core.prompts.mixin import PromptMixinType
from llama_index.core.response_synthesizers import TreeSummarize
from llama_index.core.schema import QueryBundle
from llama_index.core.types import RESPONSE_TEXT_TYPE

from crag_shared.adapter import NO_KNOWLEDGE_ANSWER

#: The verdicts collected for the outermost `CRAGVerdicts` query running in this context.
_VERDICTS: ContextVar[list[dict[str, Any]] | None] = ContextVar("crag_llamaindex_verdicts", default=None)


def record_verdict(verdict: dict[str, Any]) -> None:
    """Add one CRAG engine's verdict (its `metadata["crag"]`) to the `CRAGVerdicts` query running around it."""
    collected = _VERDICTS.get()
    if collected is not None:
        collected.append(verdict)


class CRAGVerdicts(BaseQueryEngine):
    """Any query engine (a sub-question engine, a router) whose response carries, under `metadata["crag"]`,
    the verdict of every CRAG engine it ran for this query, in the order they answered: a list, also when
    there is one. Works on the sync and async paths (the verdicts travel in the query's context)."""

    def __init__(self, engine: BaseQueryEngine, callback_manager: CallbackManager | None = None) -> None:
        if not isinstance(engine, BaseQueryEngine):
            raise TypeError(f"CRAGVerdicts wraps a LlamaIndex query engine, got {type(engine).__name__}")
        self._engine = engine
        super().__init__(callback_manager=callback_manager or CallbackManager())

    def _get_prompt_modules(self) -> PromptMixinType:
        return {"engine": self._engine}

    def _query(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        collected: list[dict[str, Any]] = []
        token = _VERDICTS.set(collected)
        try:
            response = self._engine.query(query_bundle)
        finally:
            _VERDICTS.reset(token)
        return _with_verdicts(response, collected)

    async def _aquery(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        collected: list[dict[str, Any]] = []
        token = _VERDICTS.set(collected)
        try:
            response = await self._engine.aquery(query_bundle)
        finally:
            _VERDICTS.reset(token)
        return _with_verdicts(response, collected)


def _with_verdicts(response: RESPONSE_TYPE, collected: list[dict[str, Any]]) -> RESPONSE_TYPE:
    response.metadata = {**(response.metadata or {}), "crag": list(collected)}
    return response


class AbstentionAware(TreeSummarize):
    """`TreeSummarize` (what routers and sub-question engines summarize with) that answers
    `no_knowledge_answer` without calling the LLM when every answer it is given is a CRAG abstention, so
    abstentions are never summarized into an answer. Takes TreeSummarize's arguments (`llm=`...)."""

    def __init__(self, *, no_knowledge_answer: str = NO_KNOWLEDGE_ANSWER, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.no_knowledge_answer = no_knowledge_answer

    def abstained(self, text_chunks: Sequence[str]) -> bool:
        """Whether every chunk is an abstention (a sub-answer that says CRAG found no knowledge)."""
        return bool(text_chunks) and all(self.no_knowledge_answer in chunk for chunk in text_chunks)

    def get_response(self, query_str: str, text_chunks: Sequence[str], **kwargs: Any) -> RESPONSE_TEXT_TYPE:
        """The no-knowledge answer when every chunk abstained, else TreeSummarize's answer."""
        if self.abstained(text_chunks):
            return self.no_knowledge_answer
        return super().get_response(query_str, text_chunks, **kwargs)

    async def aget_response(self, query_str: str, text_chunks: Sequence[str], **kwargs: Any) -> RESPONSE_TEXT_TYPE:
        """Async `get_response`."""
        if self.abstained(text_chunks):
            return self.no_knowledge_answer
        return await super().aget_response(query_str, text_chunks, **kwargs)
