"""CRAG's verdict as a small HTML card, for Jupyter (`_repr_html_`) and for the rows of `crag report`.

It reads the one summary shape every entry point exposes (`CorrectionResult.to_dict()`, LlamaIndex
`response.metadata["crag"]`, Haystack's `CRAGReport`), so a result looks the same wherever it came from.
Every text is escaped: strips and web pages are untrusted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

#: Strip text shown per strip; the card is a summary, the full text is in the result.
STRIP_CHARS = 240

COLOURS = {"correct": "#1a7f37", "ambiguous": "#9a6700", "incorrect": "#cf222e", "unjudged": "#57606a"}


def _number(value: object) -> str:
    return f"{value:+.2f}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "–"


def _source(strip: Mapping[str, Any]) -> str:
    url, title = strip.get("url"), strip.get("title")
    if isinstance(url, str) and url.startswith(("http://", "https://")):
        return f'<a href="{escape(url)}" rel="noopener noreferrer">{escape(str(title or url))}</a>'
    return escape(str(title or strip.get("source_id") or ""))


def _strips(strips: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for strip in strips:
        text = " ".join(str(strip.get("text") or "").split())
        text = text if len(text) <= STRIP_CHARS else text[:STRIP_CHARS].rsplit(" ", 1)[0] + " …"
        rows.append(f"<tr><td>{_number(strip.get('score'))}</td><td>{escape(str(strip.get('origin') or ''))}</td>"
                    f"<td>{_source(strip)}</td><td>{escape(text)}</td></tr>")
    if not rows:
        return ""
    return ("<table class='crag-strips'><thead><tr><th>score</th><th>origin</th><th>source</th><th>text</th></tr>"
            f"</thead><tbody>{''.join(rows)}</tbody></table>")


def verdict_html(summary: Mapping[str, Any]) -> str:
    """A compact card: the action, the scores against the thresholds, why CRAG abstained, the strips with
    their sources, the web pages and the fallbacks."""
    action = str(summary.get("action") or "unjudged")
    scores = [s for s in summary.get("scores") or () if isinstance(s, (int, float))]
    thresholds = summary.get("thresholds") or {}
    parts = [f"<div class='crag-verdict' style='font-family:sans-serif;font-size:13px'>"
             f"<b style='color:{COLOURS.get(action, '#57606a')}'>CRAG: {escape(action)}</b>"]
    if scores:
        parts.append(f" · best score {_number(max(scores))} of {len(scores)} (upper "
                     f"{_number(thresholds.get('upper'))}, lower {_number(thresholds.get('lower'))})")
    abstention = summary.get("abstention")
    if isinstance(abstention, Mapping):
        parts.append(f"<div>abstained: {escape(str(abstention.get('reason') or abstention.get('code') or ''))}</div>")
    parts.append(_strips(summary.get("strips") or []))
    urls = [u for u in summary.get("web_urls") or () if isinstance(u, str)]
    if urls:
        links = ", ".join(f'<a href="{escape(u)}" rel="noopener noreferrer">{escape(u)}</a>'
                          for u in urls if u.startswith(("http://", "https://")))
        query = summary.get("rewritten_query")
        parts.append(f"<div>web{f' ({escape(str(query))})' if query else ''}: {links}</div>")
    for fallback in summary.get("fallbacks") or ():
        if isinstance(fallback, Mapping):
            parts.append(f"<div>fallback in {escape(str(fallback.get('step')))}: {escape(str(fallback.get('reason')))}"
                         f" → {escape(str(fallback.get('applied')))}</div>")
    parts.append("</div>")
    return "".join(parts)


class Verdict(dict[str, Any]):
    """CRAG's metadata on a response: a plain dict (JSON, pickle and `==` as before) that Jupyter shows as
    a card."""

    def _repr_html_(self) -> str:
        return verdict_html(self)
