"""The trace of one correction: typed steps, so readers use fields instead of parsing dictionaries.

Each step is a frozen dataclass; `name` is the label it carries in `Trace.to_dict()` (the JSON that
adapters expose), and `Trace.find(name)` / `Trace.of(StepType)` look steps up.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, TypeVar

__all__ = [
    "LOG", "Abstained", "AmbiguousStrips", "BelowLower", "Decided", "Evaluated", "EvaluatorNote",
    "FallbackTaken", "Finished", "Input", "LogSink", "PassagesFiltered", "Refined", "Rewritten", "Searched",
    "SkippedPassage", "Step", "Trace", "TruncatedPassage", "Unjudged", "log", "logging_to",
]

LOG = logging.getLogger("crag")

#: Where crag's log records go: `sink(level, template, fields)`, the template in `str.format` style over the
#: fields. By default the "crag" logger (fields also as `extra`, prefixed `crag_`); an adapter routes them
#: to its framework's logger for the calls it makes (`logging_to`), so each event is logged once, there.
LogSink = Callable[[int, str, dict[str, Any]], None]


def crag_logger(level: int, template: str, fields: dict[str, Any]) -> None:
    """The default sink: the "crag" logger, the message formatted, each field in `extra` as `crag_<name>`."""
    LOG.log(level, template.format(**fields), extra={f"crag_{name}": value for name, value in fields.items()})


_SINK: ContextVar[LogSink] = ContextVar("crag_log_sink", default=crag_logger)


@contextmanager
def logging_to(sink: LogSink) -> Iterator[None]:
    """Send crag's log records to `sink` inside the block (this task and the threads it starts)."""
    token = _SINK.set(sink)
    try:
        yield
    finally:
        _SINK.reset(token)


def log(level: int, template: str, **fields: Any) -> None:
    """Log one event through the current sink (`logging_to`)."""
    _SINK.get()(level, template, fields)


@dataclass(frozen=True)
class Step:
    """One entry of a trace."""

    name: ClassVar[str] = "step"

    def label(self) -> str:
        """The step's label in `Trace.to_dict()`."""
        return self.name

    def to_dict(self) -> dict[str, Any]:
        """This object as JSON-ready values."""
        return {"step": self.label(), **asdict(self)}


@dataclass(frozen=True)
class Input(Step):
    """What came in: passages given, passages with text (scored), the evaluator, and the language the
    question was analyzed in (for evaluators that analyze text; "auto" resolved)."""

    name: ClassVar[str] = "input"
    passages: int
    scored: int
    evaluator: str
    language: str | None = None


@dataclass(frozen=True)
class SkippedPassage(Step):
    """A passage without text, left out of scoring."""
    name: ClassVar[str] = "skip_passage"
    index: int
    id: str | None
    reason: str


@dataclass(frozen=True)
class Evaluated(Step):
    """Every passage's score in input order (-1 for passages without text), and, from an evaluator that
    explains its scores, why each lowered passage was lowered ("" where none was), e.g. "no sentence
    states 'born' with a place (-0.60)": the signal that turned a near miss away. From the LLM judge, which
    judge scored each passage (`judges`: "llm", or the offline judge's spec where it stood in) and the LLM
    calls made (`llm_calls`)."""

    name: ClassVar[str] = "evaluate"
    scores: list[float]
    ms: float
    reasons: list[str] = field(default_factory=list)
    judges: list[str] = field(default_factory=list)
    llm_calls: int = 0


@dataclass(frozen=True)
class EvaluatorNote(Step):
    """Something unusual the evaluator reported (an unparsable LLM verdict...)."""

    name: ClassVar[str] = "evaluator_note"
    note: str


@dataclass(frozen=True)
class Decided(Step):
    """The action, the thresholds and the best score that decided it, and why the action is not the one
    the scores alone give, when it is not (`why`). `follow_up`: for a question its scores judge Correct, the
    language whose follow-up table it was read with, or "" where that language has none (a question that names
    no one but a pronoun is then not caught); None when the scores judge it otherwise. `judge`: who decided
    (`decided_by`): the evaluator's spec, or for the LLM judge "llm", with its offline partner where it stood in."""
    name: ClassVar[str] = "decide"
    action: str
    upper: float
    lower: float
    max_score: float | None
    why: str = ""
    follow_up: str | None = None
    judge: str = ""


@dataclass(frozen=True)
class BelowLower:
    """A passage scoring below the lower threshold (left out of refinement)."""
    index: int
    id: str | None
    score: float


@dataclass(frozen=True)
class PassagesFiltered(Step):
    """Ambiguous keeps the passages scoring ≥ lower; Incorrect drops them all (`kept` is then empty)."""

    name: ClassVar[str] = "filter_passages"
    action: str
    kept: list[int]
    below_lower: list[BelowLower]


@dataclass(frozen=True)
class AmbiguousStrips(Step):
    """What `AmbiguousRule` made of an Ambiguous question's internal strips: those scoring at least `floor`
    (the upper threshold, or above every score for a question that names no one) are kept; those below
    are dropped without web knowledge (`rule` "drop"), kept ("keep") or kept marked unverified ("guard")."""

    name: ClassVar[str] = "ambiguous_strips"
    floor: float
    rule: str
    web_knowledge: bool
    kept: int
    unverified: int
    dropped: int


@dataclass(frozen=True)
class TruncatedPassage(Step):
    """A passage cut to the refiner's `max_chars` before splitting."""
    name: ClassVar[str] = "truncate_passage"
    index: int
    chars: int
    kept: int


@dataclass(frozen=True)
class Refined(Step):
    """One refinement: `pieces` candidate strips scored, `kept` selected; named refine_internal/refine_web."""

    origin: str
    mode: str
    passages: int
    pieces: int
    kept: int
    strip_scores: list[float]
    ms: float

    def label(self) -> str:
        """`refine_internal` or `refine_web`."""
        return f"refine_{self.origin}"


@dataclass(frozen=True)
class Rewritten(Step):
    """The question rewritten for web search, and how (LLM or keywords)."""
    name: ClassVar[str] = "rewrite"
    query: str
    method: str


@dataclass(frozen=True)
class Searched(Step):
    """The web search: its results (title, url, snippet, paragraph count, position) and issues, or the error."""

    name: ClassVar[str] = "web_search"
    query: str
    results: list[dict[str, Any]] = field(default_factory=list)
    issues: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None


@dataclass(frozen=True)
class Unjudged(Step):
    """The query could not be judged (empty): nothing was scored or searched."""

    name: ClassVar[str] = "unjudged"
    reason: str


@dataclass(frozen=True)
class FallbackTaken(Step):
    """A documented fallback the corrector took, as a step of the trace: the step it stood in for (`of`, also
    read as `step`), why, and what was done instead. `expected` marks the configured outcome of a setup (no web
    search configured), which is no fault: it is logged at INFO once, not on every query. The summary's
    `Fallback` is its JSON form."""
    name: ClassVar[str] = "fallback"
    of: str
    reason: str
    applied: str
    expected: bool = False

    @property
    def step(self) -> str:
        """The step the fallback stood in for ("evaluate", "web_search", ...)."""
        return self.of


@dataclass(frozen=True)
class Abstained(Step):
    """No knowledge for the generator; `code` and `reason` as in `crag_shared.types.Abstention`."""

    name: ClassVar[str] = "abstain"
    code: str
    reason: str


@dataclass(frozen=True)
class Finished(Step):
    """The result: action, strips (internal, web), words handed over, total milliseconds."""
    name: ClassVar[str] = "result"
    action: str
    strips: int
    internal: int
    external: int
    words: int
    total_ms: float


S = TypeVar("S", bound=Step)


@dataclass
class Trace:
    """Every step of one correction: what was computed, how long it took, and every fallback."""

    steps: list[Step] = field(default_factory=list)

    @property
    def fallbacks(self) -> list[FallbackTaken]:
        """Every fallback taken, in order."""
        return [s for s in self.steps if isinstance(s, FallbackTaken)]

    def add(self, step: Step) -> None:
        """Append a step."""
        self.steps.append(step)

    def fallback(self, step: str, reason: str, applied: str, *, expected: bool = False) -> None:
        """Record a fallback. A fault is also logged as a warning (on the "crag" logger unless an adapter
        routes it, see `logging_to`); an `expected` one is left to its caller to log once."""
        if not expected:
            log(logging.WARNING, "CRAG fallback in {step}: {reason} -> {applied}", step=step, reason=reason,
                applied=applied)
        self.add(FallbackTaken(step, reason, applied, expected))

    def extend(self, other: Trace) -> None:
        """Append another trace's steps, its fallbacks among them (already logged where they happened)."""
        self.steps.extend(other.steps)

    def find(self, name: str) -> list[Step]:
        """The steps labelled `name` ("evaluate", "refine_internal", ...), in order."""
        return [s for s in self.steps if s.label() == name]

    def of(self, kind: type[S]) -> list[S]:
        """The steps of one type, in order."""
        return [s for s in self.steps if isinstance(s, kind)]

    def to_dict(self) -> dict[str, Any]:
        """This object as JSON-ready values."""
        return {"steps": [s.to_dict() for s in self.steps],
                "fallbacks": [{"step": f.of, "reason": f.reason, "applied": f.applied, "expected": f.expected}
                              for f in self.fallbacks]}
