"""What every search-engine provider shares: Wikipedia preference, page fetching, paragraph extraction."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, Literal
from urllib.parse import urlsplit

from ..types import WebIssue, WebResult, WebSearchResponse
from .extract import extract_page, text_paragraphs
from .fetch import FetchedPage, PageFetcher, run_sync

#: Extraction is CPU-bound Python: parallel threads only fight over the GIL (5 pages took 5-20x longer
#: each). One worker extracts pages one by one as they arrive, off the event loop.
_EXTRACTOR = ThreadPoolExecutor(max_workers=1, thread_name_prefix="crag-extract")


def is_wikipedia(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host == "wikipedia.org" or host.endswith(".wikipedia.org")


def prefer_wikipedia(results: list[dict[str, Any]], mode: str) -> list[dict[str, Any]]:
    """The paper's `wiki` mode: Wikipedia pages first (engine order kept within each group); `all`: as is."""
    if mode == "all":
        return results
    return sorted(results, key=lambda r: not is_wikipedia(str(r.get("link", ""))))


class FetchingWebSearch(ABC):
    """A search engine whose top results' pages are fetched and split into title-prefixed paragraphs.

    Subclasses implement `organic_results(query)` (blocking; it runs in a worker thread) returning dicts
    with `title`, `link` and `snippet`, and raise `WebSearchError` when the search as a whole fails.
    - `mode="wiki"` (default) puts Wikipedia results first, as the paper does; `wiki_prefix=True` also
      prefixes the query with "Wikipedia, " like the official code; `mode="all"` keeps engine order.
    - With `fetch_pages=True` the chosen results' pages are fetched concurrently by `fetcher`; pages that
      fail are listed in the response's `issues`, and a result without page text keeps its snippet for
      the corrector's snippet fallback. `fast_extraction` trades trafilatura's backup extractors for speed.
    """

    def __init__(self, *, mode: Literal["wiki", "all"] = "wiki", wiki_prefix: bool = False,
                 fetch_pages: bool = True, fetcher: PageFetcher | None = None, min_paragraph_chars: int = 20,
                 fast_extraction: bool = True) -> None:
        if mode not in ("wiki", "all"):
            raise ValueError(f"mode must be 'wiki' or 'all', got {mode!r}")
        self.mode = mode
        self.wiki_prefix = wiki_prefix
        self.fetch_pages = fetch_pages
        self.fetcher = fetcher or PageFetcher()
        self.min_paragraph_chars = min_paragraph_chars
        self.fast_extraction = fast_extraction

    @abstractmethod
    def organic_results(self, query: str) -> list[dict[str, Any]]:
        """One request to the engine; its organic results in engine order."""

    def engine_query(self, query: str) -> str:
        return f"Wikipedia, {query}" if self.wiki_prefix and self.mode == "wiki" else query

    def search(self, query: str, top_k: int = 5) -> WebSearchResponse:
        return run_sync(self.asearch(query, top_k))

    async def asearch(self, query: str, top_k: int = 5) -> WebSearchResponse:
        organic = await asyncio.to_thread(self.organic_results, query)
        chosen = prefer_wikipedia([r for r in organic if r.get("link")], self.mode)[:top_k]
        titles = {r["link"]: str(r.get("title", "")) for r in chosen}

        async def extract(page: FetchedPage) -> FetchedPage:
            title, paragraphs = await asyncio.get_running_loop().run_in_executor(
                _EXTRACTOR, self._paragraphs, page.text or "", page.content_type, page.url, titles.get(page.url, ""))
            return replace(page, title=title, paragraphs=paragraphs)

        pages = await self.fetcher.fetch_all([r["link"] for r in chosen], extract) if self.fetch_pages else []
        issues: list[WebIssue] = []
        results = []
        for position, hit in enumerate(chosen, 1):
            title, paragraphs = titles[hit["link"]], ()
            if pages:
                page = pages[position - 1]
                if page.error:
                    issues.append(WebIssue("fetch", page.error, hit["link"]))
                else:
                    if page.truncated:
                        issues.append(WebIssue("fetch", f"page cut at {self.fetcher.max_bytes} bytes", hit["link"]))
                    if not page.paragraphs:
                        issues.append(WebIssue("extract", "no paragraph text found", hit["link"]))
                    title, paragraphs = page.title or title, page.paragraphs
            results.append(WebResult(title, hit["link"], str(hit.get("snippet", "")), paragraphs, position))
        return WebSearchResponse(results, issues, query)

    def _paragraphs(self, text: str, content_type: str, url: str, title: str) -> tuple[str, tuple[str, ...]]:
        if content_type == "text/plain":
            return text_paragraphs(text, title=title, min_chars=self.min_paragraph_chars)
        return extract_page(text, url=url, fallback_title=title, min_chars=self.min_paragraph_chars,
                            fast=self.fast_extraction)
