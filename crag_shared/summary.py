"""One correction's summary as every entry point exposes it (`CorrectionResult.to_dict()`, LlamaIndex's
`response.metadata["crag"]`, Haystack's `CRAGReport`, a `crag run` output line), in its one typed shape,
`Summary`, and drawn as an HTML card.

The verdict line, the card and `crag report` read `Summary`, never the dict: a misspelt field is a type
error, not a silent None. `Summary.from_dict` reads the JSON form back, checking each field's kind (a
record of the wrong shape raises ValueError naming the field). `to_dict` writes it.

The card (`verdict_html`; `Verdict` for Jupyter) shows the action and the best score against the
thresholds, each retrieved passage (its title or source, its first words, its score, the evaluator's
reason, whether its text was kept), each strip with its text, the web pages and the fallbacks. Every text
is untrusted: shown on one line (`one_line`) and escaped.

This module imports nothing of crag, so `types.py` builds the summary and draws its card from it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from html import escape
from typing import Any, TypeVar

T = TypeVar("T")

#: The first characters of a passage or strip a summary keeps (its first words; the full text is in the result).
PREVIEW_CHARS = 240
#: The most passages a summary lists, in input order (the card says how many more were retrieved).
PASSAGES_LISTED = 50
#: The longest reason a summary keeps for a passage.
REASON_CHARS = 300

COLOURS = {"correct": "#1a7f37", "ambiguous": "#9a6700", "incorrect": "#cf222e", "unjudged": "#57606a"}

#: Characters that must not reach a line shown to a person or an LLM: controls (line breaks, escapes),
#: invisible format and direction marks, line and paragraph separators, lone surrogates. The zero-width
#: joiners (U+200C, U+200D) stay: scripts and emoji are written with them.
_UNSHOWN = re.compile("[\x00-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b\u200e\u200f\u2028-\u202e\u2060-\u206f"
                      "\ufeff\ufff9-\ufffb\ud800-\udfff]")
_NO_BRACKETS = str.maketrans("[]", "()")


def one_line(text: str, limit: int | None = None) -> str:
    """Untrusted text as one plain line: every control, format or separator character a space, runs of space
    one space; longer than `limit`, cut at a word boundary with " …"."""
    head = text if limit is None else text[: 4 * limit + 256]  # a long text is cut before it is cleaned
    line = " ".join(_UNSHOWN.sub(" ", head).split())
    if limit is None or (len(line) <= limit and len(head) == len(text)):
        return line
    return line[:limit].rsplit(" ", 1)[0] + " …"


def label_line(text: str) -> str:
    """A source label shown beside quoted text (`[web: LABEL]`, `[from LABEL]`): one line without square
    brackets, so it can neither close its marker nor open another."""
    return one_line(text).translate(_NO_BRACKETS)


@dataclass(frozen=True)
class SummaryAbstention:
    """Why there is no knowledge (`crag_shared.types.Abstention` as JSON)."""

    code: str
    reason: str


@dataclass(frozen=True)
class SummaryFallback:
    """A fallback taken (`crag_shared.trace.Fallback` as JSON): the step, why, and what was done instead."""

    step: str
    reason: str
    applied: str
    expected: bool = False


@dataclass(frozen=True)
class SummaryStrip:
    """A knowledge strip: its text (the first words in a summary; whole in `to_dict(texts=True)`), score and
    provenance. Provenance unknown to the writer (a web tool's verdict) is None."""

    text: str
    score: float
    origin: str
    source_id: str | None = None
    source_index: int | None = None
    position: int | None = None
    start: int | None = None
    end: int | None = None
    title: str | None = None
    url: str | None = None
    unverified: bool = False


@dataclass(frozen=True)
class SummaryPassage:
    """A retrieved passage as CRAG judged it: its place in the input, title, URL and first words, its score
    (None: it had no text and was not judged), the evaluator's reason for lowering it ("" where none) and how
    many knowledge strips came from it (None where the record does not say)."""

    index: int
    id: str | None
    title: str | None
    url: str | None
    text: str
    score: float | None
    reason: str = ""
    strips: int | None = None

    @property
    def kept(self) -> bool | None:
        """Whether some of its text is in the knowledge (None: not recorded)."""
        return None if self.strips is None else self.strips > 0


@dataclass(frozen=True)
class Summary:
    """The summary of one correction (see the module docstring); `trace` is the whole trace as JSON, when
    the writer included it; `judge`, who judged the passages ("llm", or an offline judge's spec, and why)."""

    action: str
    scores: list[float] = field(default_factory=list)
    thresholds: tuple[float, float] | None = None
    abstention: SummaryAbstention | None = None
    web_missing: str | None = None
    rewritten_query: str | None = None
    web_urls: list[str] = field(default_factory=list)
    strips: list[SummaryStrip] = field(default_factory=list)
    fallbacks: list[SummaryFallback] = field(default_factory=list)
    passages: list[SummaryPassage] = field(default_factory=list)
    trace: dict[str, Any] | None = None
    judge: str | None = None

    @property
    def abstained(self) -> bool:
        """True when there is no knowledge at all (`abstention` says why)."""
        return self.abstention is not None

    @property
    def best(self) -> float | None:
        """The best passage score, None when nothing was scored."""
        return max(self.scores) if self.scores else None

    def kept(self, index: int) -> bool:
        """Whether passage `index` (its place in the input) gave the knowledge some of its text: counted by its
        strips where the record lists them, else by the judge's rule (no passage when the action is Incorrect
        or Unjudged, else those scoring at least the lower threshold)."""
        listed = self.passages[index] if index < len(self.passages) else None
        if listed is not None and listed.index == index and listed.strips is not None:
            return listed.strips > 0
        if index >= len(self.scores) or (listed is not None and listed.index == index and listed.score is None):
            return False
        lower = self.thresholds[1] if self.thresholds else -math.inf
        return self.action not in ("incorrect", "unjudged") and self.scores[index] >= lower

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the summary's fields, `abstained`, and `trace` when there is one."""
        upper_lower = None if self.thresholds is None else {"upper": self.thresholds[0], "lower": self.thresholds[1]}
        data: dict[str, Any] = {
            "action": self.action, "abstained": self.abstained,
            "abstention": asdict(self.abstention) if self.abstention else None, "web_missing": self.web_missing,
            "scores": list(self.scores), "thresholds": upper_lower, "rewritten_query": self.rewritten_query,
            "web_urls": list(self.web_urls), "strips": [asdict(s) for s in self.strips],
            "fallbacks": [asdict(f) for f in self.fallbacks], "passages": [asdict(p) for p in self.passages],
            "judge": self.judge}
        if self.trace is not None:
            data["trace"] = self.trace
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Summary:
        """The summary a JSON object holds; a field of the wrong kind raises ValueError naming it. Fields a
        record leaves out take their defaults; without `passages` (calibration records, records written
        before they were kept), each score is listed as a passage with no text."""
        scores = [_finite(s, f"scores[{i}]") for i, s in enumerate(_list(data, "scores"))]
        strips = [_strip(_object(s, f"strips[{i}]"), f"strips[{i}].") for i, s in enumerate(_list(data, "strips"))]
        listed = _list(data, "passages") if "passages" in data else None
        passages = ([_passage(_object(p, f"passages[{i}]"), f"passages[{i}].") for i, p in enumerate(listed)]
                    if listed is not None else _scored_passages(scores, strips if "strips" in data else None))
        abstention = data.get("abstention")
        trace = data.get("trace")
        if trace is not None and not isinstance(trace, dict):
            raise ValueError(f"trace: expected an object, got {type(trace).__name__}")
        return cls(
            action=_text(data, "action"), scores=scores, thresholds=_thresholds(data.get("thresholds")),
            abstention=None if abstention is None else _abstention(abstention),
            web_missing=_optional_text(data, "web_missing"), rewritten_query=_optional_text(data, "rewritten_query"),
            web_urls=[_kind(u, str, f"web_urls[{i}]") for i, u in enumerate(_list(data, "web_urls"))],
            strips=strips, passages=passages,
            fallbacks=[_fallback(_object(f, f"fallbacks[{i}]"), f"fallbacks[{i}].")
                       for i, f in enumerate(_list(data, "fallbacks"))],
            trace=trace, judge=_optional_text(data, "judge"))


def as_summary(value: Summary | Mapping[str, object]) -> Summary:
    """`value` itself, or the summary its JSON form holds (`Summary.from_dict`)."""
    return value if isinstance(value, Summary) else Summary.from_dict(value)


_KINDS = {str: "text", int: "a whole number", bool: "true or false", list: "a list", dict: "an object"}


def _kind(value: object, kind: type[T], where: str) -> T:
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise ValueError(f"{where}: expected {_KINDS.get(kind, kind.__name__)}, got {type(value).__name__}")
    return value


def _finite(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{where}: expected a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"{where}: expected a finite number, got {value}")
    return float(value)


def _object(value: object, where: str) -> dict[str, object]:
    return _kind(value, dict, where)


def _list(data: Mapping[str, object], key: str, prefix: str = "") -> list[object]:
    value = data.get(key)
    return [] if value is None else _kind(value, list, f"{prefix}{key}")


def _text(data: Mapping[str, object], key: str, prefix: str = "") -> str:
    return _kind(data.get(key), str, f"{prefix}{key}")


def _optional_text(data: Mapping[str, object], key: str, prefix: str = "") -> str | None:
    return None if data.get(key) is None else _text(data, key, prefix)


def _optional_int(data: Mapping[str, object], key: str, prefix: str) -> int | None:
    value = data.get(key)
    return None if value is None else _kind(value, int, f"{prefix}{key}")


def _thresholds(value: object) -> tuple[float, float] | None:
    if value is None:
        return None
    found = _object(value, "thresholds")
    return _finite(found.get("upper"), "thresholds.upper"), _finite(found.get("lower"), "thresholds.lower")


def _abstention(value: object) -> SummaryAbstention:
    found = _object(value, "abstention")
    return SummaryAbstention(_text(found, "code", "abstention."), _text(found, "reason", "abstention."))


def _fallback(data: Mapping[str, object], prefix: str) -> SummaryFallback:
    return SummaryFallback(_text(data, "step", prefix), _text(data, "reason", prefix), _text(data, "applied", prefix),
                           _kind(data.get("expected", False), bool, f"{prefix}expected"))


def _strip(data: Mapping[str, object], prefix: str) -> SummaryStrip:
    return SummaryStrip(
        text=_optional_text(data, "text", prefix) or "", score=_finite(data.get("score"), f"{prefix}score"),
        origin=_text(data, "origin", prefix), source_id=_optional_text(data, "source_id", prefix),
        source_index=_optional_int(data, "source_index", prefix), position=_optional_int(data, "position", prefix),
        start=_optional_int(data, "start", prefix), end=_optional_int(data, "end", prefix),
        title=_optional_text(data, "title", prefix), url=_optional_text(data, "url", prefix),
        unverified=_kind(data.get("unverified", False), bool, f"{prefix}unverified"))


def _passage(data: Mapping[str, object], prefix: str) -> SummaryPassage:
    score = data.get("score")
    return SummaryPassage(
        index=_kind(data.get("index"), int, f"{prefix}index"), id=_optional_text(data, "id", prefix),
        title=_optional_text(data, "title", prefix), url=_optional_text(data, "url", prefix),
        text=_optional_text(data, "text", prefix) or "",
        score=None if score is None else _finite(score, f"{prefix}score"),
        reason=_optional_text(data, "reason", prefix) or "", strips=_optional_int(data, "strips", prefix))


def _scored_passages(scores: Sequence[float], strips: Sequence[SummaryStrip] | None) -> list[SummaryPassage]:
    """Passages known only by their scores (and, where the record has its strips, how many each gave)."""
    counts = None if strips is None or any(s.source_index is None for s in strips) else [
        sum(1 for s in strips if s.origin == "internal" and s.source_index == i) for i in range(len(scores))]
    return [SummaryPassage(i, None, None, None, "", s, "", None if counts is None else counts[i])
            for i, s in enumerate(scores[:PASSAGES_LISTED])]


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:+.2f}"


def _link(url: str | None, text: str) -> str:
    shown = escape(one_line(text, PREVIEW_CHARS))
    if url and url.startswith(("http://", "https://")):
        return f'<a href="{escape(one_line(url))}" rel="noopener noreferrer">{shown}</a>'
    return shown


def _band(score: float | None, thresholds: tuple[float, float] | None) -> str:
    if score is None or thresholds is None:
        return ""
    upper, lower = thresholds
    return " ≥ upper" if score >= upper else " &lt; lower" if score < lower else " between"


def _fate(passage: SummaryPassage, summary: Summary) -> str:
    """Whether the passage's text was kept, and if not, where it was turned away."""
    if passage.score is None:
        return "no: " + ("not judged" if summary.action == "unjudged" else "no text")
    if passage.strips is None:
        return "–"
    if passage.strips:
        return f"yes: {passage.strips} strip{'s' if passage.strips != 1 else ''}"
    lower = summary.thresholds[1] if summary.thresholds else None
    return "no: " + ("the action is incorrect" if summary.action == "incorrect" else "below the lower threshold"
                     if lower is not None and passage.score < lower else "no strip passed the strip threshold")


def _passages(summary: Summary, answers: Sequence[bool] | None) -> str:
    rows = []
    for passage in summary.passages:
        answer = answers is not None and passage.index < len(answers) and answers[passage.index]
        name = passage.title or passage.url or ""
        source = f"<b>{_link(passage.url, name)}</b> " if name else ""
        refused = answer and not summary.kept(passage.index)
        mark = ("<td style='color:#cf222e'>answer refused</td>" if refused else "<td>answer</td>" if answer
                else "<td></td>") if answers is not None else ""
        rows.append(f"<tr class='crag-passage{' crag-answer' if answer else ''}'><td>{passage.index}</td>"
                    f"<td>{source}{escape(one_line(passage.text, PREVIEW_CHARS))}</td>"
                    f"<td>{_number(passage.score)}{_band(passage.score, summary.thresholds)}</td>"
                    f"<td>{escape(one_line(passage.reason, REASON_CHARS))}</td>"
                    f"<td>{escape(_fate(passage, summary))}</td>{mark}</tr>")
    if not rows:
        return ""
    more = len(summary.scores) - len(summary.passages)
    head = "".join(f"<th>{h}</th>" for h in ("#", "passage", "score", "why", "kept")) + (
        "<th>answer</th>" if answers is not None else "")
    return (f"<table class='crag-passages'><caption>retrieved passages</caption><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>" + (f"<div>{more} more passages not listed</div>" if more > 0
                                                          else ""))


def _strips(strips: Sequence[SummaryStrip]) -> str:
    rows = [f"<tr><td>{_number(s.score)}</td><td>{escape(one_line(s.origin))}</td>"
            f"<td>{_link(s.url, s.title or s.url or s.source_id or '')}</td>"
            f"<td>{escape(one_line(s.text, PREVIEW_CHARS))}</td></tr>" for s in strips]
    if not rows:
        return ""
    return ("<table class='crag-strips'><caption>knowledge strips</caption><thead><tr><th>score</th><th>origin</th>"
            f"<th>source</th><th>text</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")


def verdict_html(summary: Summary | Mapping[str, object], answers: Sequence[bool] | None = None) -> str:
    """A compact card of a summary (or its JSON form): the action, the scores against the thresholds, why CRAG
    abstained, each retrieved passage, the strips with their text and sources, the web pages and the
    fallbacks. `answers` (one per passage, in input order) marks the passages that hold an answer, and those
    of them refused."""
    summary = as_summary(summary)
    action = one_line(summary.action)
    parts = [f"<div class='crag-verdict' style='font-family:sans-serif;font-size:13px'>"
             f"<b style='color:{COLOURS.get(action, '#57606a')}'>CRAG: {escape(action)}</b>"]
    if summary.scores:
        upper, lower = summary.thresholds or (None, None)
        parts.append(f" · best score {_number(summary.best)} of {len(summary.scores)} (upper {_number(upper)}, "
                     f"lower {_number(lower)})")
    if summary.judge:
        parts.append(f" · judged by {escape(one_line(summary.judge))}")
    if summary.abstention is not None:
        parts.append(f"<div>abstained: {escape(one_line(summary.abstention.reason or summary.abstention.code))}</div>")
    parts += [_passages(summary, answers), _strips(summary.strips)]
    links = ", ".join(_link(u, u) for u in summary.web_urls if u.startswith(("http://", "https://")))
    if summary.web_urls:
        query = f" ({escape(one_line(summary.rewritten_query))})" if summary.rewritten_query else ""
        parts.append(f"<div>web{query}: {links}</div>")
    parts += [f"<div>fallback in {escape(one_line(f.step))}: {escape(one_line(f.reason))} → "
              f"{escape(one_line(f.applied))}</div>" for f in summary.fallbacks]
    parts.append("</div>")
    return "".join(parts)


class Verdict(dict[str, Any]):
    """CRAG's metadata on a response: a plain dict (JSON, pickle and `==` as a dict) that Jupyter shows as a
    card."""

    def _repr_html_(self) -> str:
        return verdict_html(self)
