"""The one data model of crag: adapters translate to and from these types at their edges."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .summary import (
    PASSAGES_LISTED,
    PREVIEW_CHARS,
    REASON_CHARS,
    Abstention,
    Fallback,
    Summary,
    SummaryPassage,
    SummaryStrip,
    Thresholds,
    label_line,
    one_line,
    verdict_html,
)
from .trace import Decided, Evaluated, SkippedPassage, Trace

__all__ = [
    "UNVERIFIED_END", "UNVERIFIED_NOTE", "Action", "CorrectionResult", "FailedCorrection", "Judgment", "Origin",
    "Passage", "Refinement", "Strip", "WebIssue", "WebOutcome", "WebResult", "WebSearchResponse", "neutralized",
    "unverified_mark",
]


class Action(str, Enum):
    """The three knowledge actions of the paper (section 4.3), and UNJUDGED for a query that could not be
    judged at all (an empty query): never Correct by default, and never searched."""

    CORRECT = "correct"
    INCORRECT = "incorrect"
    AMBIGUOUS = "ambiguous"
    UNJUDGED = "unjudged"

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


_MARKERS = re.compile(r"\[\s*(web\s*:|unverified\s*:|end\s+of\s+(?:web|unverified)\s+text\s*\])", re.IGNORECASE)


_SOURCE_LINE = re.compile(r"^(\s*)web_source(\s*):", re.IGNORECASE | re.MULTILINE)


def ascii_host(url: str) -> str:
    """`url` with a non-ASCII host in its punycode form (`xn--...`), so a look-alike of a known name (Cyrillic
    letters in "раураl.com") shows as what it is; anything that is not such a URL comes back unchanged."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if not parts.scheme or not host or host.isascii():
        return url
    try:
        encoded = host.encode("idna").decode("ascii")
    except UnicodeError:
        encoded = host.encode("ascii", "backslashreplace").decode("ascii")
    netloc = parts.netloc.lower().replace(host, encoded)
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def neutralized(text: str) -> str:
    """Untrusted text with any block delimiter of its own (`[web: ...`, `[end of web text]`, `[unverified: ...`,
    `[end of unverified text]`, in any case or spacing) turned into parentheses, so it can neither close its
    block nor open another, and
    any line of its own that starts like the `web_source:` header adapters show beside web text made
    plain (`web_source -`), so it cannot pose as one."""
    text = _MARKERS.sub(lambda m: "(" + m.group(1).rstrip("]").rstrip() + (")" if m.group(1).endswith("]") else ""),
                        text)
    return _SOURCE_LINE.sub(r"\1web_source\2 -", text)


#: What the generator reads beside a strip CRAG could not verify (`ambiguous="guard"`), after the mark
#: "unverified": the instruction that keeps an unsure passage from becoming an answer it does not state.
UNVERIFIED_NOTE = ("CRAG could not verify that this passage answers the question: answer from it only if it "
                   "states the answer; if no passage does, say that the answer was not found.")


def unverified_mark() -> str:
    """The mark and the instruction as one line, as every prompt crag owns shows them beside a strip."""
    return f"[unverified: {UNVERIFIED_NOTE}]"


#: Where an unverified strip ends in a prompt: its own text cannot write this (`neutralized`), so a line break
#: inside it cannot start what reads as a new, verified passage.
UNVERIFIED_END = "[end of unverified text]"


@dataclass(frozen=True)
class Strip:
    """A piece of refined knowledge with its provenance.

    `position` is the strip's index within its source; `start`/`end` are character offsets into the source
    text, so a citation can point at the exact span. `unverified`: an Ambiguous question's strip scoring
    below the upper threshold, handed on under `ambiguous="guard"` (the prompt marks it, see
    `UNVERIFIED_NOTE`).
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
    unverified: bool = False

    def to_dict(self) -> dict[str, Any]:
        """This object as JSON-ready values."""
        data = asdict(self)
        data["origin"] = self.origin.value
        return data

    @property
    def source_label(self) -> str | None:
        """For web strips, where the text came from, marked as untrusted; None for internal strips."""
        if self.origin is not Origin.WEB:
            return None
        return f"{ascii_host(label_line(str(self.url or self.title or 'unknown page')))} (untrusted web page)"

    def prompt_text(self) -> str:
        """The strip as it should meet an LLM prompt: web text delimited with its source, so a page that
        says "ignore previous instructions" reads as quoted page content, not as the prompt's own words. The
        page cannot forge the delimiters: its own `[web:` / `[end of web text]` are neutralized, and the
        label (URL or title) is one line without brackets. An unverified strip stands between its mark and
        `UNVERIFIED_END`, its own delimiters neutralized."""
        label = self.source_label
        text = self.text if label is None else f"[web: {label}]\n{neutralized(self.text)}\n[end of web text]"
        return f"{unverified_mark()}\n{neutralized(text)}\n{UNVERIFIED_END}" if self.unverified else text


@dataclass(frozen=True)
class WebResult:
    """One search hit; `paragraphs` holds extracted page paragraphs when the page was fetched."""

    title: str
    url: str
    snippet: str = ""
    paragraphs: tuple[str, ...] = ()
    position: int = 0

    def to_dict(self) -> dict[str, Any]:
        """This object as JSON-ready values."""
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
    """What a web search provider returns: results in rank order, issues met, the query searched."""
    results: list[WebResult]
    issues: list[WebIssue] = field(default_factory=list)
    query: str = ""


@dataclass
class Refinement:
    """What `Corrector.refine` returns: the kept strips in original order, and the trace of the step."""

    strips: list[Strip]
    trace: Trace = field(default_factory=Trace)


@dataclass
class Judgment:
    """Steps 1-2 of Algorithm 1 (what `Corrector.judge` returns): every passage's score, the action, and
    which passages go on to refinement.

    `scored` are the passages with text; `kept` those refined as internal knowledge (score ≥ lower;
    none when the action is Incorrect). `evaluator` names the evaluator whose scores decided, after any
    fallback; `Corrector.finish` keeps scoring with it; `judges`, who scored each passage."""

    query: str
    passages: list[Passage]
    scores: list[float]
    action: Action
    thresholds: tuple[float, float]
    scored: list[int]
    kept: list[int]
    evaluator: str
    trace: Trace = field(default_factory=Trace)
    #: the corrector's per-query scoring state (its evaluator in use and score cache), opaque to readers
    state: object | None = field(default=None, repr=False, compare=False)

    @property
    def reasons(self) -> list[str]:
        """Why the judge lowered each passage, in input order ("" where it gives none)."""
        found = next((step.reasons for step in self.trace.of(Evaluated) if step.reasons), None)
        return list(found) if found else [""] * len(self.passages)

    @property
    def judges(self) -> list[str]:
        """Which judge scored each passage, in input order ("llm", or the LLM judge's offline partner where it
        stood in; "" for every passage when the evaluator is not the LLM judge, or for one not scored)."""
        found = next((step.judges for step in self.trace.of(Evaluated) if step.judges), None)
        return list(found) if found else [""] * len(self.passages)


@dataclass
class WebOutcome:
    """Step 3's web half (what `Corrector.search` returns): the rewritten query and the search's
    passages (page paragraphs, else snippets), or `failure` saying why there is no web knowledge."""

    question: str
    query: str
    method: str
    results: list[WebResult] = field(default_factory=list)
    issues: list[WebIssue] = field(default_factory=list)
    passages: list[Passage] = field(default_factory=list)
    failure: str = ""
    error: str | None = None  # the search's exception, when it raised
    used_snippets: bool = False
    trace: Trace = field(default_factory=Trace)


@dataclass(frozen=True)
class FailedCorrection:
    """A query that `Corrector.correct_many` could not correct, in its place in the output; the others ran."""

    query: str
    error: str
    exception: BaseException | None = field(default=None, compare=False, repr=False)


@dataclass
class CorrectionResult:
    """What `Corrector.correct` returns: the action, the refined knowledge and a full trace.

    `abstention` is set exactly when `knowledge` is empty (see `Abstention`). `web_missing` says why the
    web half of an Incorrect or Ambiguous action is missing (e.g. "no web search configured"), else None.
    `scores` has one score per passage, in input order, or none when the query was not judged.
    """

    query: str
    action: Action
    knowledge: list[Strip]
    scores: list[float]
    passages: list[Passage]
    thresholds: tuple[float, float]
    rewritten_query: str | None = None
    web_results: list[WebResult] = field(default_factory=list)
    trace: Trace = field(default_factory=Trace)
    web: WebOutcome | None = None
    abstention: Abstention | None = None
    web_missing: str | None = None

    @property
    def abstained(self) -> bool:
        """True when there is no knowledge for the generator: answer "I don't know" instead of guessing
        (`abstention` says why)."""
        return self.abstention is not None

    @property
    def internal(self) -> list[Strip]:
        """The strips from the retrieved passages."""
        return [s for s in self.knowledge if s.origin is Origin.INTERNAL]

    @property
    def external(self) -> list[Strip]:
        """The strips from the web."""
        return [s for s in self.knowledge if s.origin is Origin.WEB]

    @property
    def fallbacks(self) -> list[Fallback]:
        """Every fallback taken, in order (the trace's `FallbackTaken` steps as the summary's records)."""
        return [Fallback(f.of, f.reason, f.applied, f.expected) for f in self.trace.fallbacks]

    @property
    def knowledge_text(self) -> str:
        """The knowledge as one string, strips in order, the way the paper hands it to the generator; web
        strips are delimited with their source (see `Strip.prompt_text`)."""
        return "\n".join(s.prompt_text() for s in self.knowledge)

    def summary(self) -> dict[str, Any]:
        """A JSON-ready digest (no trace, no secrets): action, abstention, scores, thresholds, web URLs, each
        strip's provenance and first words, each retrieved passage as judged, fallbacks (`Summary`'s JSON form)."""
        return self.typed_summary(trace=False).to_dict()

    def typed_summary(self, *, texts: bool = False, trace: bool = True) -> Summary:
        """The summary in its one typed shape (what the verdict line, the card and `crag report` read): each
        strip's first words (whole with `texts`), the first `PASSAGES_LISTED` passages, the trace as JSON."""
        return Summary(
            action=self.action.value, scores=list(self.scores), thresholds=Thresholds.of(self.thresholds),
            abstention=self.abstention,
            web_missing=self.web_missing, rewritten_query=self.rewritten_query,
            web_urls=[r.url for r in self.web_results],
            strips=[SummaryStrip(s.score, s.origin.value, s.text if texts else one_line(s.text, PREVIEW_CHARS),
                                 s.source_id, s.source_index, s.position, s.start, s.end, s.title, s.url,
                                 s.unverified)
                    for s in self.knowledge],
            fallbacks=self.fallbacks,
            passages=self._judged_passages(), trace=self.trace.to_dict() if trace else None,
            judge=next((d.judge for d in self.trace.of(Decided)), None) or None)

    def _judged_passages(self) -> list[SummaryPassage]:
        """The first passages as CRAG judged them: score, the evaluator's reason, how many strips each gave."""
        evaluated = self.trace.of(Evaluated)
        reasons = evaluated[0].reasons if evaluated else []
        skipped = {s.index: s.reason for s in self.trace.of(SkippedPassage)}
        strips = Counter(s.source_index for s in self.internal)
        return [SummaryPassage(i, p.id, p.title and one_line(p.title, PREVIEW_CHARS), p.url and one_line(p.url, 2048),
                               one_line(p.text or "", PREVIEW_CHARS),
                               None if i in skipped or i >= len(self.scores) else self.scores[i],
                               one_line(skipped.get(i) or (reasons[i] if i < len(reasons) else ""), REASON_CHARS),
                               strips[i])
                for i, p in enumerate(self.passages[:PASSAGES_LISTED])]

    def _repr_html_(self) -> str:
        """Jupyter's view of the result: a compact card (action, scores and thresholds, passages, strips, web,
        fallbacks)."""
        return verdict_html(self.typed_summary())

    def to_dict(self, *, texts: bool = False) -> dict[str, Any]:
        """The one serialized form of a result: the summary and the whole trace; with `texts`, every strip
        in full, as `crag run` writes it. Adapters expose it as their CRAG metadata."""
        return self.typed_summary(texts=texts).to_dict()
