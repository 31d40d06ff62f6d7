"""Instrumentation events, emitted through LlamaIndex's dispatcher so CRAG shows in existing tracing."""

from __future__ import annotations

from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.events.base import BaseEvent

from crag_shared.adapter import CorrectionResult

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
    web = result.web
    if web is not None:
        events.append(CRAGWebSearchEvent(
            query=result.query, search_query=web.query, urls=[r.url for r in web.results],
            issues=[f"{i.url}: {i.reason}" for i in web.issues] + ([web.error] if web.error else [])))
    events.extend(CRAGFallbackEvent(step=f.step, reason=f.reason, applied=f.applied) for f in result.fallbacks)
    return events


def emit(result: CorrectionResult) -> None:
    """Send a correction's events through LlamaIndex's dispatcher."""
    for event in events_for(result):
        dispatcher.event(event)


async def aemit(result: CorrectionResult) -> None:
    """Async `emit`."""
    for event in events_for(result):
        await dispatcher.aevent(event)
