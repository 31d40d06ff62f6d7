"""A search's answer as CRAG reads it: page paragraphs, else the snippets (flagged), else why there are none.

The Corrector reads every answer with `read_search`, and so do the adapters' web-search components, so
they cannot drift from the core.
"""

from __future__ import annotations

from dataclasses import replace

from ..rewrite import Rewrite
from ..trace import Rewritten, Searched
from ..types import Trace, WebOutcome, WebSearchResponse
from ..web.base import response_passages


def read_search(question: str, rewrite: Rewrite, response: WebSearchResponse | None,
                error: BaseException | None = None) -> WebOutcome:
    """A search's answer (or its error) as the Corrector reads it: page paragraphs, else the snippets
    (flagged), else `failure` saying why there is no web knowledge. Web-search components of the
    adapters read answers with this too, so they cannot drift from the core."""
    trace = Trace()
    trace.add(Rewritten(rewrite.query, rewrite.method))
    if rewrite.note:
        trace.fallback("rewrite", rewrite.note, "used offline keyword extraction")
    outcome = WebOutcome(question, rewrite.query, rewrite.method, trace=trace)
    if response is None:
        message = f"{type(error).__name__}: {error}"
        trace.add(Searched(rewrite.query, error=message))
        return replace(outcome, error=message, failure=f"web search failed: {message}")
    trace.add(Searched(rewrite.query, [r.to_dict() for r in response.results],
                       [{"stage": i.stage, "reason": i.reason, "url": i.url} for i in response.issues]))
    passages, used_snippets = response_passages(response)
    if used_snippets:
        trace.fallback("web_pages", "no page yielded text", "used the search snippets")
    failure = "" if passages else (
        "web search returned no results" if not response.results else "web results had no text")
    return replace(outcome, results=list(response.results), issues=list(response.issues), passages=passages,
                   failure=failure, used_snippets=used_snippets)
