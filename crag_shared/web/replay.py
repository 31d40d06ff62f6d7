"""Offline web search from recorded results: for the demo, docs, tests and benchmarks."""

from __future__ import annotations

import json
from pathlib import Path

from ..types import WebSearchResponse
from .base import check_search
from .memory import InMemorySearch, WebPage


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
        with self.path.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    results = [WebPage(r["title"], r["url"], r.get("text", ""), r.get("snippet", ""))
                               for r in record["results"]]
                except (ValueError, KeyError, TypeError) as error:
                    raise ValueError(f"{self.path}:{number}: not a replay record ({error})") from error
                self._recorded[_key(record["query"])] = results
                pages.update((p.url, p) for p in results)
        self._all = InMemorySearch(pages.values())
        self.queries: list[str] = []

    def search(self, query: str, top_k: int = 5) -> WebSearchResponse:
        """The recorded results of `query` (none if it was not recorded)."""
        check_search(query, top_k)
        self.queries.append(query)
        recorded = self._recorded.get(_key(query))
        if recorded is None:
            return self._all.search(query, top_k)
        return InMemorySearch(recorded).ordered(query, top_k)

    async def asearch(self, query: str, top_k: int = 5) -> WebSearchResponse:
        """Async `search`."""
        return self.search(query, top_k)
