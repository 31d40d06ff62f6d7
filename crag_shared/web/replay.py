"""Offline web search from recorded results: for the demo, docs, tests and benchmarks."""

from __future__ import annotations

from pathlib import Path

from ..files import MAX_RECORDED_BYTES, json_lines
from ..types import WebSearchResponse
from .base import check_search
from .memory import InMemorySearch, WebPage, remember


def _record(record: object) -> tuple[str, list[WebPage]]:
    """(query, pages) of one replay line; anything malformed raises naming what."""
    if not isinstance(record, dict) or not isinstance(record.get("query"), str):
        raise TypeError("a replay line is an object with a text `query`")
    results = record.get("results")
    if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
        raise TypeError("`results` must be a list of objects")
    pages = []
    for result in results:
        fields = [result.get("title"), result.get("url"), result.get("text", ""), result.get("snippet", "")]
        if not all(isinstance(field, str) for field in fields):
            raise TypeError("each result needs text `title` and `url` (and text `text`/`snippet` if given)")
        pages.append(WebPage(*fields))
    return record["query"], pages


def _key(query: str) -> str:
    return " ".join(query.casefold().split())


class ReplaySearch:
    """Serves recorded search results and page texts from a JSONL file; nothing leaves the machine.

    Each line: `{"query": "...", "results": [{"title", "url", "snippet", "text"}, ...]}`; `text` is the
    page's extracted text, paragraphs separated by blank lines. A query recorded verbatim (case and
    spacing ignored) gets its recorded results in order; any other query is answered from all recorded
    pages, ranked lexically, so a different rewriter still finds something plausible.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._recorded: dict[str, list[WebPage]] = {}
        pages: dict[str, WebPage] = {}
        for number, value in json_lines(self.path, "replay", MAX_RECORDED_BYTES):
            try:
                query, results = _record(value)
            except (ValueError, KeyError, TypeError) as error:
                message = f"{self.path}:{number}: not a replay record ({type(error).__name__}: {error})"
                raise ValueError(message[:300]) from None
            self._recorded[_key(query)] = results
            pages.update((p.url, p) for p in results)
        self._all = InMemorySearch(pages.values())
        self.queries: list[str] = []

    def search(self, query: str, top_k: int = 5) -> WebSearchResponse:
        """The recorded results of `query` (none if it was not recorded)."""
        check_search(query, top_k)
        remember(self.queries, query)
        recorded = self._recorded.get(_key(query))
        if recorded is None:
            return self._all.search(query, top_k)
        return InMemorySearch(recorded).ordered(query, top_k)

    async def asearch(self, query: str, top_k: int = 5) -> WebSearchResponse:
        """Async `search`."""
        return self.search(query, top_k)
