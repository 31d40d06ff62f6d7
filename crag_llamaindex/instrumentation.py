"""Instrumentation events, emitted through LlamaIndex's dispatcher so CRAG shows in existing tracing."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from llama_index.core.callbacks import CallbackManager, CBEventType, EventPayload
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.events.base import BaseEvent
from llama_index.core.instrumentation.events.rerank import ReRankEndEvent, ReRankStartEvent
from llama_index.core.schema import NodeWithScore, QueryBundle

from crag_shared.adapter import CorrectionResult, WebOutcome

__all__ = [
    "CRAGActionEvent", "CRAGFallbackEvent", "CRAGWebSearchEvent", "aemit", "dispatcher", "emit", "emit_search",
    "reranking",
]

dispatcher = get_dispatcher(__name__)


class CRAGActionEvent(BaseEvent):
    """The evaluator's verdict on one query's retrieval."""

    query: str
    action: str
    scores: list[float]
    upper: float
    lower: float

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this class under."""
        return "CRAGActionEvent"


class CRAGWebSearchEvent(BaseEvent):
    """A web search made for an Incorrect or Ambiguous query."""

    query: str
    search_query: str | None
    urls: list[str]
    issues: list[str]

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this class under."""
        return "CRAGWebSearchEvent"


class CRAGFallbackEvent(BaseEvent):
    """A documented fallback CRAG took (web down, LLM failed, evaluator failed...)."""

    step: str
    reason: str
    applied: str

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this class under."""
        return "CRAGFallbackEvent"


def events_for(result: CorrectionResult) -> list[BaseEvent]:
    """The instrumentation events of one correction: the action, the web search, each fallback."""
    upper, lower = result.thresholds
    events: list[BaseEvent] = [CRAGActionEvent(query=result.query, action=result.action.value,
                                               scores=list(result.scores), upper=upper, lower=lower)]
    if result.web is not None:
        events.append(web_search_event(result.query, result.web))
    events.extend(CRAGFallbackEvent(step=f.step, reason=f.reason, applied=f.applied) for f in result.fallbacks)
    return events


def web_search_event(query: str, web: WebOutcome) -> CRAGWebSearchEvent:
    """The event of one web search: the rewritten query, the result URLs and every issue met."""
    return CRAGWebSearchEvent(query=query, search_query=web.query, urls=[r.url for r in web.results],
                              issues=[f"{i.url}: {i.reason}" for i in web.issues] + ([web.error] if web.error else []))


def emit_search(web: WebOutcome) -> None:
    """Send a standalone web search's events (`WebSearchRetriever`): the search, and its fallbacks."""
    dispatcher.event(web_search_event(web.question, web))
    for fallback in web.trace.fallbacks:
        dispatcher.event(CRAGFallbackEvent(step=fallback.step, reason=fallback.reason, applied=fallback.applied))


def emit(result: CorrectionResult) -> None:
    """Send a correction's events through LlamaIndex's dispatcher."""
    for event in events_for(result):
        dispatcher.event(event)


async def aemit(result: CorrectionResult) -> None:
    """Async `emit`."""
    for event in events_for(result):
        await dispatcher.aevent(event)


@contextmanager
def reranking(callback_manager: CallbackManager, model: str, top_n: int, nodes: list[NodeWithScore],
              query_bundle: QueryBundle | None) -> Iterator[Callable[[list[NodeWithScore]], list[NodeWithScore]]]:
    """What LlamaIndex's own rerankers report around their work, so existing tracing (LlamaDebugHandler,
    OpenInference, Langfuse) shows CRAG as a rerank step: `ReRankStartEvent`/`ReRankEndEvent` on the
    dispatcher and a `CBEventType.RERANKING` event on the callback manager. Yields `done(nodes)`, which
    records the output and returns it. `model` is the name the events carry (e.g. "crag:lexical")."""
    payload: dict[str, Any] = {EventPayload.NODES: nodes, EventPayload.MODEL_NAME: model, EventPayload.TOP_K: top_n,
               EventPayload.QUERY_STR: query_bundle.query_str if query_bundle else ""}
    with callback_manager.event(CBEventType.RERANKING, payload=payload) as event:
        dispatcher.event(ReRankStartEvent(query=query_bundle, nodes=nodes, top_n=top_n, model_name=model))

        def done(output: list[NodeWithScore]) -> list[NodeWithScore]:
            dispatcher.event(ReRankEndEvent(nodes=output))
            event.on_end(payload={EventPayload.NODES: output})
            return output

        yield done
