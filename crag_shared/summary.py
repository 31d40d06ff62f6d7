"""One correction's summary as every entry point exposes it (`CorrectionResult.to_dict()`, LlamaIndex's
`response.metadata["crag"]`, Haystack's `CRAGReport`, a `crag run` output line), in its one typed shape,
`Summary`, and drawn as an HTML card.

The shapes are pydantic declarations, so the JSON form is checked by what declares it (`Summary.from_dict`:
a record of the wrong shape raises ValueError naming the field), and published as a JSON Schema
(`Summary.model_json_schema()`, `crag schema summary`). `Abstention` and `Fallback` are the core's own records
(`CorrectionResult.abstention`, `.fallbacks`), declared here once. The verdict line, the card and `crag report`
read `Summary`, never the dict.

The card (`verdict_html`; `Verdict` for Jupyter) shows the action and the best score against the
thresholds, each retrieved passage (its title or source, its first words, its score, the evaluator's
reason, whether its text was kept), each strip with its text, the web pages and the fallbacks. Every text
is untrusted: shown on one line (`one_line`) and escaped.

This module imports nothing of crag, so `types.py` builds the summary and draws its card from it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from html import escape
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, computed_field, model_validator
from pydantic.dataclasses import dataclass

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
#: Every field of its declared kind, no coercion ("0.5" is not a score, 1 is not text); a nested record may be
#: its JSON object.
Score = Annotated[float, Field(strict=True, allow_inf_nan=False)]  # an int is a score; True, "0.5", NaN are not
Text = Annotated[str, Field(strict=True)]
Whole = Annotated[int, Field(strict=True)]
Flag = Annotated[bool, Field(strict=True)]


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
class Abstention:
    """Why a correction hands the generator no knowledge at all, so the adapters answer without the LLM.

    `code` is one of:
    - "empty_query": the query was empty or whitespace; nothing was judged;
    - "incorrect": every passage was judged irrelevant and there is no web knowledge (`reason` says why:
      no web search configured, the search failed, found nothing, or its pages had no text);
    - "no_knowledge": Correct or Ambiguous, but no strip passed the strip threshold and there is no web
      knowledge.
    """

    code: Text
    reason: Text


@dataclass(frozen=True)
class Fallback:
    """A documented fallback the corrector took, and why. `expected` marks the configured outcome of a
    setup (no web search configured), which is no fault: it is logged at INFO once, not on every query."""

    step: Text
    reason: Text
    applied: Text
    expected: Flag = False

    def __str__(self) -> str:
        """"step: reason -> what was done", the one way a fallback is written in logs and metadata."""
        return f"{self.step}: {self.reason} -> {self.applied}"


@dataclass(frozen=True)
class SummaryStrip:
    """A knowledge strip as the summary keeps it: its first words (whole in `to_dict(texts=True)`), score and
    provenance; provenance unknown to the writer (a web tool's verdict) is None."""

    score: Score
    origin: Text
    text: Text = ""
    source_id: Text | None = None
    source_index: Whole | None = None
    position: Whole | None = None
    start: Whole | None = None
    end: Whole | None = None
    title: Text | None = None
    url: Text | None = None
    unverified: Flag = False


@dataclass(frozen=True)
class SummaryPassage:
    """A retrieved passage as CRAG judged it: its place in the input, title, URL and first words, its score
    (None: it had no text and was not judged), the evaluator's reason for lowering it ("" where none) and how
    many knowledge strips came from it (None where the record does not say)."""

    index: Whole
    id: Text | None = None
    title: Text | None = None
    url: Text | None = None
    text: Text = ""
    score: Score | None = None
    reason: Text = ""
    strips: Whole | None = None

    @property
    def kept(self) -> bool | None:
        """Whether some of its text is in the knowledge (None: not recorded)."""
        return None if self.strips is None else self.strips > 0


class Thresholds(BaseModel):
    """The action thresholds a correction was judged with; unpacks as `upper, lower` (`Thresholds.of(pair)`)."""

    model_config = ConfigDict(frozen=True)
    upper: Score
    lower: Score

    def __iter__(self) -> Iterator[float]:  # type: ignore[override]
        return iter((self.upper, self.lower))

    def __getitem__(self, index: int) -> float:
        return (self.upper, self.lower)[index]

    @classmethod
    def of(cls, pair: tuple[float, float]) -> Thresholds:
        """The thresholds of an (upper, lower) pair."""
        return cls(upper=pair[0], lower=pair[1])


class Summary(BaseModel):
    """The summary of one correction (see the module docstring); `trace` is the whole trace as JSON, when
    the writer included it; `judge`, who judged the passages ("llm", or an offline judge's spec, and why).
    Extra fields of a record (a `crag run` line's id and question) are ignored."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    action: Text
    scores: list[Score] = Field(default_factory=list)
    thresholds: Thresholds | None = None
    abstention: Abstention | None = None
    web_missing: Text | None = None
    rewritten_query: Text | None = None
    web_urls: list[Text] = Field(default_factory=list)
    strips: list[SummaryStrip] = Field(default_factory=list)
    fallbacks: list[Fallback] = Field(default_factory=list)
    passages: list[SummaryPassage] = Field(default_factory=list)
    trace: dict[str, Any] | None = None
    judge: Text | None = None

    @model_validator(mode="before")
    @classmethod
    def _read(cls, data: Any) -> Any:
        """A record's JSON form as the fields take it: thresholds as a pair or {"upper", "lower"}; without
        `passages` (calibration records, records written before they were kept), each score a passage with no
        text (with the number of strips it gave, where the record's strips say)."""
        if not isinstance(data, Mapping):
            return data
        data = {k: v for k, v in data.items() if v is not None or k in ("abstention", "thresholds")}
        if isinstance(data.get("thresholds"), (tuple, list)) and len(data["thresholds"]) == 2:
            data["thresholds"] = {"upper": data["thresholds"][0], "lower": data["thresholds"][1]}
        if "passages" not in data and isinstance(data.get("scores"), list):
            data["passages"] = _scored_passages(data["scores"], data.get("strips"))
        return data

    @computed_field  # type: ignore[prop-decorator]
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
        lower = self.thresholds.lower if self.thresholds else -math.inf
        return self.action not in ("incorrect", "unjudged") and self.scores[index] >= lower

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the summary's fields, `abstained`, and `trace` when there is one."""
        return self.model_dump(mode="json", exclude_none=False, exclude={"trace"} if self.trace is None else None)

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Summary:
        """The summary a JSON object holds; a field of the wrong kind raises ValueError naming it (one line)."""
        try:
            return cls.model_validate(data)
        except ValidationError as error:
            raise ValueError(first_error(error)) from None


def first_error(error: ValidationError, at: str = "") -> str:
    """A validation error as one line: where ("strips[0].score", below `at`), what was wanted, and what came."""
    found = error.errors()[0]
    where = (at + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in found["loc"])).lstrip(".")
    message = f"{where or 'record'}: {found['msg'].removeprefix('Value error, ')}"
    return message if found["type"] == "missing" else f"{message}, got {type(found.get('input')).__name__}"


def as_summary(value: Summary | Mapping[str, object]) -> Summary:
    """`value` itself, or the summary its JSON form holds (`Summary.from_dict`)."""
    return value if isinstance(value, Summary) else Summary.from_dict(value)


def _scored_passages(scores: Sequence[object], strips: object) -> list[dict[str, object]]:
    """Passages known only by their scores (and, where the record has its strips, how many each gave)."""
    listed = strips if isinstance(strips, list) else None
    counts = None
    if listed is not None and all(isinstance(s, Mapping) and s.get("source_index") is not None for s in listed):
        counts = [sum(1 for s in listed if s.get("origin") == "internal" and s.get("source_index") == i)
                  for i in range(len(scores))]
    return [{"index": i, "id": None, "title": None, "url": None, "text": "", "score": s,
             "strips": None if counts is None else counts[i]} for i, s in enumerate(scores[:PASSAGES_LISTED])]


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:+.2f}"


def _link(url: str | None, text: str) -> str:
    shown = escape(one_line(text, PREVIEW_CHARS))
    if url and url.startswith(("http://", "https://")):
        return f'<a href="{escape(one_line(url))}" rel="noopener noreferrer">{shown}</a>'
    return shown


def _band(score: float | None, thresholds: Thresholds | None) -> str:
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
