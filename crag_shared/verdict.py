"""CRAG's verdict as a tool result an agent's LLM reads: one short verdict line, then the knowledge, one
"- " line per strip. An agent needs what a prompt needs (the knowledge, web strips marked with their page)
and what a person reading the trace would check first (the action, how sure, why nothing), not the strips'
metadata: a tool result is paid for in context on every later turn.

Both adapters build their tool results here, from the one typed summary every entry point exposes
(`Summary`: `CorrectionResult.typed_summary()`, `Summary.from_dict` of LlamaIndex's `response.metadata["crag"]`
or Haystack's `CRAGReport`). Every text from outside (a reason, a page's title or URL, a document's
`web_source`) is shown on one line, so none can forge a verdict or strip line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .policy import ActionPolicy
from .summary import Abstention, Summary, SummaryStrip, Thresholds, as_summary, label_line, one_line
from .types import CorrectionResult, unverified_mark

#: The longest reason quoted in a verdict line; longer ones are cut at a word boundary.
REASON_CHARS = 160


@dataclass(frozen=True)
class ToolStrip:
    """One strip as a tool result shows it: its text, the web page it came from (None for the user's own
    knowledge), its score, and whether CRAG could not verify it (`ambiguous="guard"`)."""

    text: str
    source: str | None = None
    score: float | None = None
    unverified: bool = False


def verdict_line(summary: Summary | Mapping[str, object]) -> str:
    """One line: the action and who judged ("judged by llm", or the offline judge's spec), the best score against
    the thresholds, where the knowledge came from, the fallbacks taken, or, when CRAG abstained, why there is no
    knowledge. `summary` may be the JSON form."""
    summary = as_summary(summary)
    head = f"CRAG verdict: {one_line(summary.action, REASON_CHARS)}" + (
        f", judged by {one_line(summary.judge, REASON_CHARS)}" if summary.judge else "")
    if summary.abstention is not None:
        return (f"{head}; no reliable knowledge: {one_line(summary.abstention.reason, REASON_CHARS)}."
                " Say that it was not found rather than guess.")
    parts = [head]
    if summary.best is not None and summary.thresholds is not None:
        upper, lower = summary.thresholds
        parts.append(f"best score {summary.best:+.2f} (upper threshold {upper:+.2f}, lower {lower:+.2f})")
    strips = summary.strips
    web = sum(1 for s in strips if s.origin == "web")
    parts.append(f"{len(strips)} strip{'s' if len(strips) != 1 else ''}" + (f", {web} from the web" if web else ""))
    weak = _weak(summary)
    if weak:
        parts.append(f"{weak} web strip{'s' if weak != 1 else ''} below the upper threshold (marked weak)")
    unverified = sum(1 for s in strips if s.unverified)
    if unverified:
        parts.append(f"{unverified} strip{'s' if unverified != 1 else ''} unverified (marked)")
    if summary.fallbacks:
        parts.append("fallback: " + one_line("; ".join(f"{f.step}: {f.reason}" for f in summary.fallbacks),
                                             REASON_CHARS))
    return "; ".join(parts) + "."


def _weak(summary: Summary) -> int:
    if summary.thresholds is None:
        return 0
    return sum(1 for s in summary.strips if s.origin == "web" and s.score < summary.thresholds[0])


def tool_text(summary: Summary | Mapping[str, object], strips: Sequence[ToolStrip]) -> str:
    """The verdict line, then one "- " line per strip (web strips with their page, and "weak" where the
    strip scored below the upper threshold; an unverified strip after its mark and instruction): the whole
    tool result an agent reads."""
    summary = as_summary(summary)
    upper = summary.thresholds[0] if summary.thresholds else None
    lines = [verdict_line(summary)]
    for strip in strips:
        line = f"- {unverified_mark() + ' ' if strip.unverified else ''}{one_line(strip.text)}"
        if strip.source:
            weak = upper is not None and strip.score is not None and strip.score < upper
            line += f" [from {label_line(strip.source)}{f'; weak match {strip.score:+.2f}' if weak else ''}]"
        lines.append(line)
    return "\n".join(lines)


def web_summary(scores: Sequence[float], thresholds: tuple[float, float], missing: str | None = None) -> Summary:
    """The summary of web knowledge judged on its own, as a web search tool returns it: `scores` are the kept
    web strips' scores, and the action is the one the policy gives them, so a page about the wrong entity
    reads as Ambiguous (weak), not as knowledge; `missing` says why there is no web knowledge, when the
    search gave none."""
    abstention = None
    if not scores:
        reason = f"there is no web knowledge ({missing})" if missing else "no web strip passed the strip threshold"
        abstention = Abstention("no_knowledge", reason)
    return Summary(action=ActionPolicy(*thresholds).decide(scores).value, scores=list(scores),
                   thresholds=Thresholds.of(thresholds), strips=[SummaryStrip(score=s, origin="web") for s in scores],
                   abstention=abstention)


def result_tool_text(result: CorrectionResult) -> str:
    """`tool_text` of a core `CorrectionResult`."""
    return tool_text(result.typed_summary(trace=False),
                     [ToolStrip(s.text, s.source_label, s.score, s.unverified) for s in result.knowledge])
