"""Google (and other engines) through SerpAPI's official `serpapi` client."""

from __future__ import annotations

from typing import Any, Literal

from .base import WebSearchError
from .deadline import RequestsSearch, call_by, deadline_session
from .fetch import PageFetcher
from .keys import ApiKey

NO_RESULTS = "hasn't returned any results"


class SerpAPISearch(RequestsSearch):
    """Web search for CRAG over SerpAPI (serpapi.com), with page fetching and paragraph extraction.

    - The key comes from `api_key` or the `SERPAPI_API_KEY` environment variable; without one,
      construction fails (not the first query). The key never appears in repr, errors, traces or
      pickles, and urllib3's request logs show it masked (SerpAPI takes it in the query string, so
      proxies and SerpAPI's own logs still see it).
    - `engine`, `num_results`, `hl`, `gl`, `location` and `params` pass through to SerpAPI;
      `base_url` points the client at another host (a proxy, or a test server).
    - `timeout` bounds the whole search call, also against an endpoint that answers a byte at a time (its
      headers or its body): the connection is shut at the deadline, so no worker thread outlives it.
    - One client (one connection pool) serves every call; calls run on the provider's own worker threads.
    - Wikipedia preference, page fetching and extraction: see `FetchingSearch`.
    Search failures (bad key, 429, 5xx, timeout, redirect loops, malformed answers, an `"error"` in a 200
    answer) raise `WebSearchError`; "no results" is an empty answer, not an error.
    """

    engine_name = "SerpAPI"

    def __init__(self, api_key: str | None = None, *, engine: str = "google", num_results: int = 10,
                 mode: Literal["wiki", "all"] = "wiki", wiki_prefix: bool = False, hl: str | None = None,
                 gl: str | None = None, location: str | None = None, params: dict[str, Any] | None = None,
                 base_url: str | None = None, timeout: float = 10.0, fetch_pages: bool = True,
                 fetcher: PageFetcher | None = None, min_paragraph_chars: int = 20,
                 max_paragraphs: int = 100, max_concurrent_searches: int = 64) -> None:
        super().__init__(mode=mode, wiki_prefix=wiki_prefix, fetch_pages=fetch_pages, fetcher=fetcher,
                         min_paragraph_chars=min_paragraph_chars, max_paragraphs=max_paragraphs, timeout=timeout,
                         max_concurrent_searches=max_concurrent_searches)
        self._api_key = ApiKey(api_key, "SERPAPI_API_KEY", "SerpAPISearch")
        self.engine = engine
        self.num_results = num_results
        self.params = {k: v for k, v in {"hl": hl, "gl": gl, "location": location}.items() if v} | (params or {})
        self.base_url = base_url

    def __repr__(self) -> str:
        return f"SerpAPISearch(engine={self.engine!r}, mode={self.mode!r}, base_url={self.base_url!r})"

    def results_by(self, query: str, ends_at: float) -> list[dict[str, Any]]:
        """The engine's organic results for `query` (title, link, snippet), or WebSearchError."""
        failure = None
        try:
            data = self._call({"engine": self.engine, "q": self.engine_query(query), "num": self.num_results,
                               **self.params}, ends_at)
        except WebSearchError:
            raise
        except Exception as error:  # whatever the client raised, the key never leaves in its text
            failure = WebSearchError(self._api_key.scrub(_describe(error)))
        if failure is not None:  # raised here, outside the handler: no chain back to the client's error
            raise failure
        if not isinstance(data, dict):
            raise WebSearchError(f"SerpAPI answered with malformed JSON ({type(data).__name__}, not an object)")
        if data.get("error"):
            if NO_RESULTS in str(data["error"]):
                return []
            raise WebSearchError(self._api_key.scrub(f"SerpAPI error: {data['error']}"))
        organic = data.get("organic_results") or []
        if not isinstance(organic, list):
            raise WebSearchError(f"SerpAPI answered with malformed organic_results ({type(organic).__name__})")
        return organic

    def _call(self, params: dict[str, Any], ends_at: float) -> Any:
        """One search through the shared client, ended at `ends_at` however the endpoint trickles."""
        client = self.shared("client", self._client)
        answer = call_by(ends_at, self.timeout, self.engine_name, lambda: client.search(params))
        return answer.as_dict() if hasattr(answer, "as_dict") else answer

    def _client(self) -> Any:
        """The official client, shared by every call: its session keeps connections alive, reads each answer
        within `MAX_ANSWER_BYTES`, and ends each call by its own deadline (see `deadline`)."""
        import serpapi

        client = serpapi.Client(api_key=self._api_key.reveal(), timeout=self.timeout)
        client.session.close()
        client.session = deadline_session(self.max_concurrent_searches)
        if self.base_url:
            client.BASE_DOMAIN = self.base_url.rstrip("/")
        return client


def _describe(error: Exception) -> str:
    import requests
    import serpapi

    if isinstance(error, serpapi.HTTPError):
        detail = getattr(error, "error", None) or str(error)
        return f"SerpAPI HTTP {getattr(error, 'status_code', '?')}: {detail}"
    if isinstance(error, (serpapi.TimeoutError, requests.Timeout, TimeoutError)):
        return f"SerpAPI timed out: {error}"
    if isinstance(error, serpapi.HTTPConnectionError):
        return f"cannot reach SerpAPI: {error}"
    if isinstance(error, requests.TooManyRedirects):
        return f"SerpAPI redirected too often: {error}"
    if isinstance(error, ValueError):  # requests' JSONDecodeError, or JSON that is not an object
        return f"SerpAPI answered with malformed JSON: {type(error).__name__}: {error}"
    return f"SerpAPI call failed: {type(error).__name__}: {error}"
