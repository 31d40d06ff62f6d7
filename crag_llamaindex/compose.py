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

import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.response.schema import RESPONSE_TYPE
from llama_index.core.callbacks import CallbackManager
from llama_index.core.prompts.mixin import PromptMixinType
from llama_index.core.response_synthesizers import TreeSummarize
from llama_index.core.schema import QueryBundle
from llama_index.core.tools import QueryEngineTool
from llama_index.core.types import RESPONSE_TEXT_TYPE

from crag_shared.adapter import NO_KNOWLEDGE_ANSWER

__all__ = ["LOG", "AbstentionAware", "CRAGVerdicts", "Chain", "record_verdict"]

LOG = logging.getLogger("crag")

#: The verdict lists of nested `CRAGVerdicts` queries, outermost first.
Chain = tuple[list[dict[str, Any]], ...]
#: The chain of the `CRAGVerdicts` queries running in this context.
_VERDICTS: ContextVar[Chain] = ContextVar("crag_llamaindex_verdicts", default=())
#: id(query engine) -> the chains of the `CRAGVerdicts` queries running over it now, from any thread.
_OPEN: dict[int, list[Chain]] = {}
_OPEN_LOCK = threading.Lock()


def record_verdict(engine: BaseQueryEngine, verdict: dict[str, Any]) -> None:
    """Add one CRAG engine's verdict (its `metadata["crag"]`) to the `CRAGVerdicts` queries running around it;
    where that cannot be known, to none, with a warning."""
    chain = _around(engine)
    if chain is None:
        LOG.warning("CRAG verdict for %r not attached to a CRAGVerdicts query: it was judged in a thread without "
                    "the query's context while unrelated CRAGVerdicts queries ran over this engine (start that "
                    "thread with contextvars.copy_context().run)", verdict.get("query"))
        return
    for verdicts in chain:
        verdicts.append(verdict)


def _around(engine: BaseQueryEngine) -> Chain | None:
    """The `CRAGVerdicts` queries a call of `engine` runs in. The caller's context names them (the same thread,
    asyncio tasks, LlamaIndex's own workers). A thread the application starts itself (a `ThreadPoolExecutor`,
    `run_in_executor`) starts with an empty context: there they are the query running over `engine` and
    those it runs inside. With unrelated ones running over it at once, which one called cannot be known: None."""
    chain = _VERDICTS.get()
    if chain:
        return chain
    with _OPEN_LOCK:
        open_chains = list(_OPEN.get(id(engine), ()))
    chain = max(open_chains, key=len, default=())
    if any(not any(c[-1] is held for held in chain) for c in open_chains):
        return None
    return chain


def query_engines(engine: BaseQueryEngine) -> list[BaseQueryEngine]:
    """`engine` and every query engine it holds, at any depth: through query engines' attributes, query-engine
    tools, and lists, tuples and dicts of them (a router's routes, a sub-question engine's tools, an
    application's own wrapper engine)."""
    found: dict[int, BaseQueryEngine] = {}
    pending: list[object] = [engine]
    while pending:
        item = pending.pop()
        if isinstance(item, BaseQueryEngine):
            if id(item) not in found:
                found[id(item)] = item
                pending.extend(getattr(item, "__dict__", {}).values())
        elif isinstance(item, QueryEngineTool):
            pending.append(item.query_engine)
        elif isinstance(item, (list, tuple)):
            pending.extend(item)
        elif isinstance(item, dict):
            pending.extend(item.values())
    return list(found.values())


@contextmanager
def _collecting(owner: BaseQueryEngine, engine: BaseQueryEngine) -> Iterator[list[dict[str, Any]]]:
    """One `CRAGVerdicts` query's verdict list, open in the query's context and on every engine below, after
    those of the queries it runs in (`_around` the `owner`)."""
    collected: list[dict[str, Any]] = []
    around = _around(owner)
    if around is None:
        LOG.warning("a CRAGVerdicts query started in a thread without its caller's context while unrelated "
                    "CRAGVerdicts queries ran over it: its verdicts reach it alone")
    chain = (*(around or ()), collected)
    keys = [id(e) for e in query_engines(engine)]
    with _OPEN_LOCK:
        for key in keys:
            _OPEN.setdefault(key, []).append(chain)
    token = _VERDICTS.set(chain)
    try:
        yield collected
    finally:
        _VERDICTS.reset(token)
        with _OPEN_LOCK:
            for key in keys:
                _OPEN[key] = [c for c in _OPEN[key] if c is not chain]
                if not _OPEN[key]:
                    del _OPEN[key]


class CRAGVerdicts(BaseQueryEngine):
    """Any query engine (a sub-question engine, a router) whose response carries, under `metadata["crag"]`,
    the verdict of every CRAG engine it ran for this query, in the order they answered: a list, also when
    there is one. Works on the sync and async paths, and when the sub-engines run in threads the
    application starts: such a thread has no context to carry the query, so a verdict judged there goes to
    the query running over its engine (a query registers on every engine it holds). With unrelated queries
    over the same engine at once the verdict cannot be placed: it is logged, not attached; start those
    threads with `contextvars.copy_context().run` and each query gets exactly its own."""

    def __init__(self, engine: BaseQueryEngine, callback_manager: CallbackManager | None = None) -> None:
        if not isinstance(engine, BaseQueryEngine):
            raise TypeError(f"CRAGVerdicts wraps a LlamaIndex query engine, got {type(engine).__name__}")
        self._engine = engine
        super().__init__(callback_manager=callback_manager or CallbackManager())

    def _get_prompt_modules(self) -> PromptMixinType:
        return {"engine": self._engine}

    def _query(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        with _collecting(self, self._engine) as collected:
            response = self._engine.query(query_bundle)
        return _with_verdicts(response, collected)

    async def _aquery(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        with _collecting(self, self._engine) as collected:
            response = await self._engine.aquery(query_bundle)
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
