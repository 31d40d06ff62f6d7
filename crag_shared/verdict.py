"""CRAG's verdict as a tool result an agent's LLM reads: one short verdict line, then the knowledge, one
"- " line per strip. An agent needs what a prompt needs (the knowledge, web strips marked with their page)
and what a person reading the trace would check first (the action, how sure, why nothing), not the strips'
metadata: a tool result is paid for in context on every later turn.

Both adapters build their tool results here, from the summary dict every entry point exposes
(`CorrectionResult.summary()`, LlamaIndex `response.metadata["crag"]`, Haystack's `CRAGReport`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .policy import ActionPolicy
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


def _short(reason: str, limit: int = REASON_CHARS) -> str:
    reason = " ".join(str(reason).split())
    return reason if len(reason) <= limit else reason[: limit].rsplit(" ", 1)[0] + " …"


def verdict_line(summary: Mapping[str, Any]) -> str:
    """One line: the action, the best score against the thresholds, where the knowledge came from, the
    fallbacks taken, or, when CRAG abstained, why there is no knowledge."""
    action = str(summary.get("action") or "unjudged")
    abstention = summary.get("abstention") or None
    if summary.get("abstained") or abstention:
        reason = abstention.get("reason", "") if isinstance(abstention, Mapping) else str(abstention)
        return (f"CRAG verdict: {action}; no reliable knowledge: {_short(reason)}. "
                "Say that it was not found rather than guess.")
    parts = [f"CRAG verdict: {action}"]
    scores = [s for s in summary.get("scores") or () if isinstance(s, (int, float))]
    thresholds = summary.get("thresholds") or {}
    if scores and thresholds:
        parts.append(f"best score {max(scores):+.2f} (upper threshold {thresholds['upper']:+.2f}, "
                     f"lower {thresholds['lower']:+.2f})")
    strips = summary.get("strips") or []
    web = sum(1 for s in strips if s.get("origin") == "web")
    parts.append(f"{len(strips)} strip{'s' if len(strips) != 1 else ''}"
                 + (f", {web} from the web" if web else ""))
    weak = _weak(strips, thresholds)
    if weak:
        parts.append(f"{weak} web strip{'s' if weak != 1 else ''} below the upper threshold (marked weak)")
    unverified = sum(1 for s in strips if s.get("unverified"))
    if unverified:
        parts.append(f"{unverified} strip{'s' if unverified != 1 else ''} unverified (marked)")
    fallbacks = summary.get("fallbacks") or []
    if fallbacks:
        parts.append("fallback: " + _short("; ".join(f"{f.get('stage')}: {f.get('reason')}" for f in fallbacks)))
    return "; ".join(parts) + "."


def _weak(strips: Sequence[Mapping[str, Any]], thresholds: Mapping[str, Any]) -> int:
    upper = thresholds.get("upper") if thresholds else None
    if upper is None:
        return 0
    return sum(1 for s in strips if s.get("origin") == "web" and s.get("score") is not None and s["score"] < upper)


def tool_text(summary: Mapping[str, Any], strips: Sequence[ToolStrip]) -> str:
    """The verdict line, then one "- " line per strip (web strips with their page, and "weak" where the
    strip scored below the upper threshold; an unverified strip after its mark and instruction): the whole
    tool result an agent reads."""
    upper = (summary.get("thresholds") or {}).get("upper")
    lines = [verdict_line(summary)]
    for strip in strips:
        line = f"- {unverified_mark() + ' ' if strip.unverified else ''}{' '.join(strip.text.split())}"
        if strip.source:
            weak = upper is not None and strip.score is not None and strip.score < upper
            line += f" [from {strip.source}{f'; weak match {strip.score:+.2f}' if weak else ''}]"
        lines.append(line)
    return "\n".join(lines)


def web_summary(scores: Sequence[float], thresholds: tuple[float, float], missing: str | None = None
                ) -> dict[str, Any]:
    """A summary (as `CorrectionResult.summary()` has it) for web knowledge judged on its own, as a web
    search tool returns it: `scores` are the kept web strips' scores, and the action is the one the policy
    gives them, so a page about the wrong entity reads as Ambiguous (weak), not as knowledge; `missing` says
    why there is no web knowledge, when the search gave none."""
    upper, lower = thresholds
    summary: dict[str, Any] = {
        "action": ActionPolicy(upper, lower).decide(scores).value, "scores": list(scores),
        "thresholds": {"upper": upper, "lower": lower},
        "strips": [{"origin": "web", "score": s} for s in scores], "abstention": None}
    if not scores:
        reason = f"there is no web knowledge ({missing})" if missing else "no web strip passed the strip threshold"
        summary["abstention"] = {"code": "no_knowledge", "reason": reason}
    return summary


def result_tool_text(result: CorrectionResult) -> str:
    """`tool_text` of a core `CorrectionResult`."""
    return tool_text(result.summary(), [ToolStrip(s.text, s.source_label, s.score, s.unverified)
                                        for s in result.knowledge])
