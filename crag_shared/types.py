"""The one data model of crag: adapters translate to and from these types at their edges."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any


class Action(str, Enum):
    """The three knowledge actions of the paper (section 4.3)."""

    CORRECT = "correct"
    INCORRECT = "incorrect"
    AMBIGUOUS = "ambiguous"

    def __str__(self) -> str:
        return self.value


class Origin(str, Enum):
    """Where a knowledge strip came from."""

    INTERNAL = "internal"
    WEB = "web"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Passage:
    """A retrieved item as the core sees it; `metadata` travels untouched for the adapters."""

    text: str | None
    id: str | None = None
    title: str | None = None
    url: str | None = None
    score: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Strip:
    """A piece of refined knowledge with its provenance.

    `position` is the strip's index within its source; `start`/`end` are character offsets into the source
    text, so a citation can point at the exact span.
    """

    text: str
    score: float
    origin: Origin
    source_id: str | None
    source_index: int
    position: int
    start: int
    end: int
    title: str | None = None
    url: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["origin"] = self.origin.value
        return data


@dataclass(frozen=True)
class WebResult:
    """One search hit; `paragraphs` holds extracted page paragraphs when the page was fetched."""

    title: str
    url: str
    snippet: str = ""
    paragraphs: tuple[str, ...] = ()
    position: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "url": self.url, "snippet": self.snippet,
                "paragraphs": len(self.paragraphs), "position": self.position}


@dataclass(frozen=True)
class WebIssue:
    """Something that went wrong in web search without stopping it (a page that failed, a skipped link)."""

    stage: str
    reason: str
    url: str | None = None


@dataclass
class WebSearchResponse:
    results: list[WebResult]
    issues: list[WebIssue] = field(default_factory=list)
    query: str = ""


@dataclass(frozen=True)
class Fallback:
    """A documented fallback the corrector took, and why."""

    step: str
    reason: str
    applied: str


@dataclass
class Trace:
    """Every step of one correction: what was computed, how long it took, and every fallback."""

    steps: list[dict[str, Any]] = field(default_factory=list)
    fallbacks: list[Fallback] = field(default_factory=list)

    def add(self, step: str, **data: Any) -> dict[str, Any]:
        entry = {"step": step, **data}
        self.steps.append(entry)
        return entry

    @contextmanager
    def timed(self, step: str, **data: Any) -> Iterator[dict[str, Any]]:
        entry = self.add(step, **data)
        started = time.perf_counter()
        try:
            yield entry
        finally:
            entry["ms"] = round((time.perf_counter() - started) * 1000, 3)

    def fallback(self, step: str, reason: str, applied: str) -> None:
        self.fallbacks.append(Fallback(step, reason, applied))
        self.add("fallback", of=step, reason=reason, applied=applied)

    def find(self, step: str) -> list[dict[str, Any]]:
        return [s for s in self.steps if s["step"] == step]

    def to_dict(self) -> dict[str, Any]:
        return {"steps": [dict(s) for s in self.steps], "fallbacks": [asdict(f) for f in self.fallbacks]}


@dataclass
class Refinement:
    """What `Corrector.refine` returns: the kept strips in original order, and the trace of the step."""

    strips: list[Strip]
    trace: Trace = field(default_factory=Trace)


@dataclass
class CorrectionResult:
    """What `Corrector.correct` returns: the action, the refined knowledge and a full trace."""

    query: str
    action: Action
    knowledge: list[Strip]
    scores: list[float]
    passages: list[Passage]
    thresholds: tuple[float, float]
    rewritten_query: str | None = None
    web_results: list[WebResult] = field(default_factory=list)
    trace: Trace = field(default_factory=Trace)

    @property
    def internal(self) -> list[Strip]:
        return [s for s in self.knowledge if s.origin is Origin.INTERNAL]

    @property
    def external(self) -> list[Strip]:
        return [s for s in self.knowledge if s.origin is Origin.WEB]

    @property
    def fallbacks(self) -> list[Fallback]:
        return self.trace.fallbacks

    @property
    def knowledge_text(self) -> str:
        """The knowledge as one string, strips in order, the way the paper hands it to the generator."""
        return "\n".join(s.text for s in self.knowledge)

    def summary(self) -> dict[str, Any]:
        """A JSON-ready digest for adapters' metadata (no passage texts, no secrets)."""
        return {
            "action": self.action.value,
            "scores": list(self.scores),
            "thresholds": {"upper": self.thresholds[0], "lower": self.thresholds[1]},
            "rewritten_query": self.rewritten_query,
            "web_urls": [r.url for r in self.web_results],
            "strips": [{"score": s.score, "origin": s.origin.value, "source_id": s.source_id,
                        "position": s.position, "url": s.url, "title": s.title} for s in self.knowledge],
            "fallbacks": [asdict(f) for f in self.fallbacks],
        }
