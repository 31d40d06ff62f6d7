"""Google (and other engines) through SerpAPI's official client, then pages fetched and extracted."""

from __future__ import annotations

import asyncio
import os
from typing import Any, Literal
from urllib.parse import urlsplit

from ..types import WebIssue, WebResult, WebSearchResponse
from .base import WebSearchError
from .extract import extract_page, text_paragraphs
from .fetch import PageFetcher, run_sync

NO_RESULTS = "hasn't returned any results"


def is_wikipedia(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host == "wikipedia.org" or host.endswith(".wikipedia.org")


def prefer_wikipedia(results: list[dict[str, Any]], mode: str) -> list[dict[str, Any]]:
    """The paper's `wiki` mode: Wikipedia pages first (engine order kept within each group); `all`: as is."""
    if mode == "all":
        return results
    return sorted(results, key=lambda r: not is_wikipedia(str(r.get("link", ""))))


class SerpAPISearch:
    """Web search for CRAG over SerpAPI (serpapi.com), with page fetching and paragraph extraction.

    - The key comes from `api_key` or the `SERPAPI_API_KEY` environment variable; without one,
      construction fails (not the first query). The key is never logged and is scrubbed from errors.
    - `mode="wiki"` (default) puts Wikipedia results first, as the paper does; `wiki_prefix=True` also
      prefixes the query with "Wikipedia, " like the official code; `mode="all"` keeps engine order.
    - `engine`, `num_results`, `hl`, `gl`, `location` and `params` pass through to SerpAPI;
      `base_url` points the client at another host (a proxy, or a test server).
    - With `fetch_pages=True` the top results' pages are fetched concurrently by `fetcher` and split
      into title-prefixed paragraphs; pages that fail are listed in the response's `issues`, and a
      result without page text still carries its snippet for the corrector's fallback.
    Search failures (bad key, 429, 5xx, timeout, malformed answer, an `"error"` in a 200 answer) raise
    `WebSearchError`; "no results" is an empty answer, not an error.
    """

    def __init__(self, api_key: str | None = None, *, engine: str = "google", num_results: int = 10,
                 mode: Literal["wiki", "all"] = "wiki", wiki_prefix: bool = False, hl: str | None = None,
                 gl: str | None = None, location: str | None = None, params: dict[str, Any] | None = None,
                 base_url: str | None = None, timeout: float = 10.0, fetch_pages: bool = True,
                 fetcher: PageFetcher | None = None, min_paragraph_chars: int = 20) -> None:
        key = api_key or os.environ.get("SERPAPI_API_KEY")
        if not key:
            raise ValueError("SerpAPISearch needs an API key: pass api_key=... or set SERPAPI_API_KEY")
        if mode not in ("wiki", "all"):
            raise ValueError(f"mode must be 'wiki' or 'all', got {mode!r}")
        self._api_key = key
        self.engine = engine
        self.num_results = num_results
        self.mode = mode
        self.wiki_prefix = wiki_prefix
        self.params = {k: v for k, v in {"hl": hl, "gl": gl, "location": location}.items() if v} | (params or {})
        self.base_url = base_url
        self.timeout = timeout
        self.fetch_pages = fetch_pages
        self.fetcher = fetcher or PageFetcher()
        self.min_paragraph_chars = min_paragraph_chars

    def __repr__(self) -> str:
        return f"SerpAPISearch(engine={self.engine!r}, mode={self.mode!r}, base_url={self.base_url!r})"

    def _scrub(self, text: str) -> str:
        return text.replace(self._api_key, "***")

    def _client(self) -> Any:
        import serpapi

        client = serpapi.Client(api_key=self._api_key, timeout=self.timeout)
        if self.base_url:
            client.BASE_DOMAIN = self.base_url.rstrip("/")
        return client

    def organic_results(self, query: str) -> list[dict[str, Any]]:
        """One SerpAPI request; its organic results, or a WebSearchError saying what went wrong."""
        import requests
        import serpapi

        q = f"Wikipedia, {query}" if self.wiki_prefix and self.mode == "wiki" else query
        try:
            answer = self._client().search({"engine": self.engine, "q": q, "num": self.num_results, **self.params})
        except serpapi.HTTPError as error:
            detail = getattr(error, "error", None) or str(error)
            raise WebSearchError(self._scrub(f"SerpAPI HTTP {error.status_code}: {detail}")) from None
        except (serpapi.TimeoutError, requests.Timeout):
            raise WebSearchError(f"SerpAPI timed out after {self.timeout:g} s") from None
        except serpapi.HTTPConnectionError as error:
            raise WebSearchError(self._scrub(f"cannot reach SerpAPI: {error}")) from None
        except ValueError as error:  # requests' JSONDecodeError
            raise WebSearchError(self._scrub(f"SerpAPI answered with malformed JSON: {error}")) from None
        data = answer.as_dict() if hasattr(answer, "as_dict") else answer
        if not isinstance(data, dict):
            raise WebSearchError(f"SerpAPI answered with malformed JSON ({type(data).__name__}, not an object)")
        if data.get("error"):
            if NO_RESULTS in str(data["error"]):
                return []
            raise WebSearchError(self._scrub(f"SerpAPI error: {data['error']}"))
        organic = data.get("organic_results") or []
        return [r for r in organic if isinstance(r, dict) and r.get("link")]

    async def asearch(self, query: str, top_k: int = 5) -> WebSearchResponse:
        organic = await asyncio.to_thread(self.organic_results, query)
        chosen = prefer_wikipedia(organic, self.mode)[:top_k]
        issues: list[WebIssue] = []
        pages = await self.fetcher.fetch_all([r["link"] for r in chosen]) if self.fetch_pages else []
        results = []
        for position, hit in enumerate(chosen, 1):
            title, paragraphs = str(hit.get("title", "")), ()
            if pages:
                page = pages[position - 1]
                if page.error:
                    issues.append(WebIssue("fetch", page.error, hit["link"]))
                else:
                    if page.truncated:
                        issues.append(WebIssue("fetch", f"page cut at {self.fetcher.max_bytes} bytes", hit["link"]))
                    title, paragraphs = await asyncio.to_thread(self._paragraphs, page.text or "",
                                                                page.content_type, hit["link"], title)
                    if not paragraphs:
                        issues.append(WebIssue("extract", "no paragraph text found", hit["link"]))
            results.append(WebResult(title, hit["link"], str(hit.get("snippet", "")), paragraphs, position))
        return WebSearchResponse(results, issues, query)

    def _paragraphs(self, text: str, content_type: str, url: str, title: str) -> tuple[str, tuple[str, ...]]:
        if content_type == "text/plain":
            return text_paragraphs(text, title=title, min_chars=self.min_paragraph_chars)
        return extract_page(text, url=url, fallback_title=title, min_chars=self.min_paragraph_chars)

    def search(self, query: str, top_k: int = 5) -> WebSearchResponse:
        return run_sync(self.asearch(query, top_k))
