"""What every search-engine provider shares: Wikipedia preference, page fetching, paragraph extraction."""

from __future__ import annotations

import asyncio
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

from ..aio import in_thread, run_sync
from ..types import WebIssue, WebResult, WebSearchResponse
from .base import MAX_PAGE_CHARS, MAX_PARAGRAPH_CHARS, MAX_TITLE_CHARS, WebSearchError, check_search, one_line
from .extract import EXTRACT_THREAD, extract_page, text_paragraphs
from .fetch import FetchedPage, PageFetcher
from .turns import Turns

__all__ = ["FetchingSearch", "clean_results", "prefer_wikipedia"]

T = TypeVar("T")


def is_wikipedia(url: str) -> bool:
    """Whether `url` is a Wikipedia page."""
    host = (urlsplit(url).hostname or "").lower()
    return host == "wikipedia.org" or host.endswith(".wikipedia.org")


def prefer_wikipedia(results: list[dict[str, Any]], mode: str) -> list[dict[str, Any]]:
    """The paper's `wiki` mode: Wikipedia pages first (engine order kept within each group); `all`: as is."""
    if mode == "all":
        return results
    return sorted(results, key=lambda r: not is_wikipedia(str(r.get("link", ""))))


def clean_results(raw: object) -> tuple[list[dict[str, str]], int]:
    """The engine's organic results with a usable http(s) link, as plain strings; and how many were not.

    One malformed entry (a link that is a list, a number, a dict, one with a line break) is skipped alone;
    the rest are kept. Titles and snippets become one line each; `content` (page text a provider returned)
    is kept up to `MAX_PAGE_CHARS`."""
    kept, skipped = [], 0
    for entry in raw if isinstance(raw, list) else []:
        raw = entry.get("link") if isinstance(entry, dict) else None
        link = raw.strip() if isinstance(raw, str) else ""
        if any(c.isspace() or ord(c) < 32 for c in link) or _scheme(link) not in ("http", "https"):
            skipped += 1  # a link with a line break or a control character in it is no URL
            continue
        content = entry.get("content")
        kept.append({"link": link, "title": _text(entry.get("title"), MAX_TITLE_CHARS),
                     "snippet": _text(entry.get("snippet"), MAX_PARAGRAPH_CHARS),
                     "content": content[:MAX_PAGE_CHARS] if isinstance(content, str) else ""})
    return kept, skipped


def _scheme(link: str) -> str:
    """The link's scheme, or "" for a link that does not parse (a broken IPv6 literal, `http://[::1/`)."""
    try:
        return urlsplit(link).scheme
    except ValueError:
        return ""


def _text(value: object, limit: int) -> str:
    """A title or snippet as one bounded line of plain text (a line break in it could pose as a prompt's
    own line; a 30 KB title would be copied into every paragraph)."""
    text = str(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else ""
    return one_line(text, limit)


class FetchingSearch(ABC):
    """A search engine whose top results' pages are fetched and split into title-prefixed paragraphs.

    Subclasses implement `organic_results(query)` (blocking; it runs in a worker thread) or the async
    `aorganic_results`, returning dicts with `title`, `link` and `snippet` (and `content`, when the engine
    returns the page's text), and raise `WebSearchError` when the search as a whole fails.
    - The search call as a whole ends within `timeout` seconds, however slowly the engine answers.
    - `mode="wiki"` (default) puts Wikipedia results first, as the paper does; `wiki_prefix=True` also
      prefixes the query with "Wikipedia, " like the official code; `mode="all"` keeps engine order.
      Results with a malformed link are skipped alone and listed in `issues`.
    - With `fetch_pages=True` the chosen results' pages are fetched concurrently by `fetcher`; pages that
      fail are listed in the response's `issues`, and a result without page text keeps its snippet for
      the corrector's snippet fallback. `fast_extraction` trades trafilatura's backup extractors for speed.
    - Extraction runs on a thread of this query's own, so one query's large pages never queue another
      query's; each page gives at most `max_paragraphs` paragraphs, and pages still being extracted at
      the fetcher's deadline are reported as late.
    - With `use_provider_content=True` a result whose `content` has at least `min_content_chars`
      characters is split into paragraphs as it is, and its page is not fetched.
    - Calls share what a provider builds once (its HTTP client, its worker threads): up to
      `max_concurrent_searches` searches ask the engine at once, from every thread and event loop of the
      process together; the rest wait their turn, first come first served (`Turns`). `timeout` counts from
      a search's turn: a search never fails for having waited behind others.
    """

    #: how errors name the engine
    engine_name = "web search"

    def __init__(self, *, mode: Literal["wiki", "all"] = "wiki", wiki_prefix: bool = False,
                 fetch_pages: bool = True, fetcher: PageFetcher | None = None, min_paragraph_chars: int = 20,
                 fast_extraction: bool = True, max_paragraphs: int = 100, timeout: float = 10.0,
                 max_concurrent_searches: int = 64, use_provider_content: bool = True,
                 min_content_chars: int = 200) -> None:
        if mode not in ("wiki", "all"):
            raise ValueError(f"mode must be 'wiki' or 'all', got {mode!r}")
        if max_paragraphs < 1 or not timeout > 0 or max_concurrent_searches < 1:
            raise ValueError("max_paragraphs and max_concurrent_searches must be at least 1 and timeout positive")
        self.mode = mode
        self.wiki_prefix = wiki_prefix
        self.fetch_pages = fetch_pages
        self.fetcher = fetcher or PageFetcher()
        self.min_paragraph_chars = min_paragraph_chars
        self.fast_extraction = fast_extraction
        self.max_paragraphs = max_paragraphs
        self.timeout = timeout
        self.max_concurrent_searches = max_concurrent_searches
        self.use_provider_content = use_provider_content
        self.min_content_chars = min_content_chars
        self._shared: dict[str, Any] = {}
        self._shared_lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()  # clients, threads and locks stay with the process that made them
        state["_shared"], state["_shared_lock"] = {}, None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _shared_lock=threading.Lock())

    def shared(self, name: str, build: Callable[[], T]) -> T:
        """What this provider builds once and every call shares (an HTTP client, a worker pool); thread-safe."""
        with self._shared_lock:
            if name not in self._shared:
                self._shared[name] = build()
            return self._shared[name]

    def turns(self) -> Turns:
        """The turns this provider's searches take to ask the engine (`max_concurrent_searches` at a time)."""
        return self.shared("turns", lambda: Turns(self.max_concurrent_searches))

    async def in_workers(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` on this provider's worker threads (`max_concurrent_searches` of them), not the loop's
        default executor: hundreds of concurrent searches would queue there behind a handful of threads."""
        workers = self.shared("workers", lambda: ThreadPoolExecutor(self.max_concurrent_searches,
                                                                    thread_name_prefix="crag-search"))
        return await in_thread(fn, *args, executor=workers)

    @abstractmethod
    def organic_results(self, query: str) -> list[dict[str, Any]]:
        """One request to the engine; its organic results in engine order."""

    async def aorganic_results(self, query: str) -> list[dict[str, Any]]:
        """Async `organic_results`; by default the blocking call on this provider's worker threads."""
        return await self.in_workers(self.organic_results, query)

    def engine_query(self, query: str) -> str:
        """The query as sent to the engine (`Wikipedia, ` prefixed with `wiki_prefix`)."""
        return f"Wikipedia, {query}" if self.wiki_prefix and self.mode == "wiki" else query

    def search(self, query: str, top_k: int = 5) -> WebSearchResponse:
        """Search, then fetch and extract the chosen result pages concurrently."""
        return run_sync(self.asearch(query, top_k))

    async def asearch(self, query: str, top_k: int = 5) -> WebSearchResponse:
        """Async `search`."""
        check_search(query, top_k)
        async with self.turns():
            started = time.monotonic()
            try:
                organic = await asyncio.wait_for(self.aorganic_results(query), self.timeout)
            except asyncio.TimeoutError:
                raise WebSearchError(f"{self.engine_name} timed out: no complete answer within {self.timeout:g} s "
                                     f"(gave up after {time.monotonic() - started:.1f} s)") from None
        usable, skipped = clean_results(organic)
        chosen = prefer_wikipedia(usable, self.mode)[:top_k]
        issues: list[WebIssue] = []
        if skipped:
            issues.append(WebIssue("search", f"skipped {skipped} result(s) without a usable http(s) link"))
        given = [self.use_provider_content and len(hit["content"]) >= self.min_content_chars for hit in chosen]
        wanted = [hit for hit, has in zip(chosen, given) if not has] if self.fetch_pages else []
        fetched = iter(await self._fetch([r["link"] for r in wanted], [r["title"] for r in wanted]) if wanted else [])
        results = []
        for position, (hit, has) in enumerate(zip(chosen, given), 1):
            title = hit["title"]
            paragraphs: tuple[str, ...] = ()
            if has:
                paragraphs = text_paragraphs(hit["content"], title=title,
                                             min_chars=self.min_paragraph_chars)[1][: self.max_paragraphs]
            elif self.fetch_pages:
                title, paragraphs = self._page_paragraphs(next(fetched), hit, issues)
            results.append(WebResult(title, hit["link"], hit["snippet"], paragraphs, position))
        return WebSearchResponse(results, issues, query)

    def _page_paragraphs(self, page: FetchedPage, hit: dict[str, str], issues: list[WebIssue]
                         ) -> tuple[str, tuple[str, ...]]:
        """A fetched page's title and paragraphs; what went wrong with it goes to `issues`."""
        if page.error:
            issues.append(WebIssue("fetch", page.error, hit["link"]))
            return hit["title"], ()
        if page.truncated:
            issues.append(WebIssue("fetch", f"page cut at {self.fetcher.max_bytes} bytes", hit["link"]))
        if not page.paragraphs:
            issues.append(WebIssue("extract", "no paragraph text found", hit["link"]))
        return page.title or hit["title"], page.paragraphs

    async def _fetch(self, urls: list[str], titles: list[str]) -> list[FetchedPage]:
        """Fetch the pages and extract each as it arrives, on an extraction thread of this call's own."""
        title_of = dict(zip(urls, titles))
        extractor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=EXTRACT_THREAD)

        async def extract(page: FetchedPage) -> FetchedPage:
            title, paragraphs = await asyncio.get_running_loop().run_in_executor(
                extractor, self._paragraphs, page.text or "", page.content_type, page.url, title_of.get(page.url, ""))
            return replace(page, title=title, paragraphs=paragraphs[: self.max_paragraphs])

        try:
            return await self.fetcher.fetch_all(urls, extract)
        finally:  # pages not yet started are dropped; one already running finishes in the background
            extractor.shutdown(wait=False, cancel_futures=True)

    def _paragraphs(self, text: str, content_type: str, url: str, title: str) -> tuple[str, tuple[str, ...]]:
        if content_type == "text/plain":
            return text_paragraphs(text, title=title, min_chars=self.min_paragraph_chars)
        return extract_page(text, url=url, fallback_title=title, min_chars=self.min_paragraph_chars,
                            fast=self.fast_extraction)
