"""Google (and other engines) through SerpAPI's official `serpapi` client."""

from __future__ import annotations

from typing import Any, Literal

from .base import WebSearchError, require_key
from .fetch import PageFetcher
from .fetching import FetchingWebSearch

NO_RESULTS = "hasn't returned any results"


class SerpAPISearch(FetchingWebSearch):
    """Web search for CRAG over SerpAPI (serpapi.com), with page fetching and paragraph extraction.

    - The key comes from `api_key` or the `SERPAPI_API_KEY` environment variable; without one,
      construction fails (not the first query). The key is never logged and is scrubbed from errors.
    - `engine`, `num_results`, `hl`, `gl`, `location` and `params` pass through to SerpAPI;
      `base_url` points the client at another host (a proxy, or a test server).
    - Wikipedia preference, page fetching and extraction: see `FetchingWebSearch`.
    Search failures (bad key, 429, 5xx, timeout, malformed answer, an `"error"` in a 200 answer) raise
    `WebSearchError`; "no results" is an empty answer, not an error.
    """

    def __init__(self, api_key: str | None = None, *, engine: str = "google", num_results: int = 10,
                 mode: Literal["wiki", "all"] = "wiki", wiki_prefix: bool = False, hl: str | None = None,
                 gl: str | None = None, location: str | None = None, params: dict[str, Any] | None = None,
                 base_url: str | None = None, timeout: float = 10.0, fetch_pages: bool = True,
                 fetcher: PageFetcher | None = None, min_paragraph_chars: int = 20) -> None:
        super().__init__(mode=mode, wiki_prefix=wiki_prefix, fetch_pages=fetch_pages, fetcher=fetcher,
                         min_paragraph_chars=min_paragraph_chars)
        self._api_key = require_key(api_key, "SERPAPI_API_KEY", "SerpAPISearch")
        self.engine = engine
        self.num_results = num_results
        self.params = {k: v for k, v in {"hl": hl, "gl": gl, "location": location}.items() if v} | (params or {})
        self.base_url = base_url
        self.timeout = timeout

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
        import requests
        import serpapi

        params = {"engine": self.engine, "q": self.engine_query(query), "num": self.num_results, **self.params}
        try:
            answer = self._client().search(params)
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
        return [r for r in data.get("organic_results") or [] if isinstance(r, dict)]
