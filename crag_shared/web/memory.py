"""An in-memory web: a handful of pages searched lexically. For tests and for offline examples."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..text.measure import QuestionWords
from ..types import WebResult, WebSearchResponse
from .base import check_search, split_paragraphs, titled_paragraphs

#: The queries an offline provider keeps for inspection (tests, demos): the most recent ones only.
KEPT_QUERIES = 1000


def remember(queries: list[str], query: str) -> None:
    """Append `query`, keeping the last `KEPT_QUERIES`: a long-running process does not grow with them."""
    queries.append(query)
    if len(queries) > KEPT_QUERIES:
        del queries[: len(queries) - KEPT_QUERIES]


@dataclass(frozen=True)
class WebPage:
    """A page for `InMemorySearch`: title, URL and text."""
    title: str
    url: str
    text: str
    snippet: str = ""


class InMemorySearch:
    """Serves `pages` for any query, ranked by lexical match of the query against title and text.

    Pages with no query word at all are never returned, so an unrelated query gets zero results, the way
    a real engine's empty answer would look to the corrector.
    """

    def __init__(self, pages: Iterable[WebPage | Mapping[str, str]]) -> None:
        self.pages = [p if isinstance(p, WebPage) else WebPage(**p) for p in pages]
        self.queries: list[str] = []

    def search(self, query: str, top_k: int = 5) -> WebSearchResponse:
        """The pages sharing the most words with `query`, best first, split into paragraphs."""
        check_search(query, top_k)
        remember(self.queries, query)
        question = QuestionWords(query)
        scores = [question.score(f"{p.title}\n{p.text}") for p in self.pages]
        ranked = sorted((i for i, s in enumerate(scores) if s > -1.0), key=lambda i: -scores[i])
        return self._respond(query, ranked[:top_k])

    def ordered(self, query: str, top_k: int = 5) -> WebSearchResponse:
        """The first `top_k` pages in their given order, as a recorded search returned them."""
        remember(self.queries, query)
        return self._respond(query, list(range(min(top_k, len(self.pages)))))

    def _respond(self, query: str, indices: list[int]) -> WebSearchResponse:
        results = []
        for position, i in enumerate(indices, 1):
            page = self.pages[i]
            paragraphs = titled_paragraphs(page.title, split_paragraphs(page.text))
            results.append(WebResult(page.title, page.url, page.snippet or page.text[:160], paragraphs, position))
        return WebSearchResponse(results, [], query)

    async def asearch(self, query: str, top_k: int = 5) -> WebSearchResponse:
        """Async `search`."""
        return self.search(query, top_k)
