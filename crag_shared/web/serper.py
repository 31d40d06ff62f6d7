"""Google through serper.dev (the API the official CRAG code used), over httpx."""

from __future__ import annotations

from typing import Any, Literal

import httpx

from .base import WebSearchError
from .fetch import PageFetcher
from .http_search import HttpxSearch
from .keys import ApiKey

__all__ = ["SerperSearch"]

SERPER_URL = "https://google.serper.dev"


class SerperSearch(HttpxSearch):
    """Web search over serper.dev: key from `api_key` or `SERPER_API_KEY` (required at construction).

    Same Wikipedia preference, page fetching, deadline and failure contract as `SerpAPISearch`; an
    error that Serper reports inside a 200 answer is a `WebSearchError` carrying its text. `base_url`
    points it at another host. `transport` is the httpx seam for tests. One HTTP client per event loop
    serves every call on it, with up to `max_concurrent_searches` connections.
    """

    engine_name = "Serper"

    def __init__(self, api_key: str | None = None, *, num_results: int = 10, mode: Literal["wiki", "all"] = "wiki",
                 wiki_prefix: bool = False, gl: str | None = None, hl: str | None = None,
                 location: str | None = None, base_url: str = SERPER_URL, timeout: float = 10.0,
                 fetch_pages: bool = True, fetcher: PageFetcher | None = None, min_paragraph_chars: int = 20,
                 max_paragraphs: int = 100, max_concurrent_searches: int = 64,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        super().__init__(api_key=ApiKey(api_key, "SERPER_API_KEY", "SerperSearch"), transport=transport,
                         mode=mode, wiki_prefix=wiki_prefix, fetch_pages=fetch_pages, fetcher=fetcher,
                         min_paragraph_chars=min_paragraph_chars, max_paragraphs=max_paragraphs, timeout=timeout,
                         max_concurrent_searches=max_concurrent_searches)
        self.num_results = num_results
        self.params = {k: v for k, v in {"gl": gl, "hl": hl, "location": location}.items() if v}
        self.base_url = base_url.rstrip("/")

    def __repr__(self) -> str:
        return f"SerperSearch(mode={self.mode!r}, base_url={self.base_url!r})"

    async def aorganic_results(self, query: str) -> list[dict[str, Any]]:
        """Serper's organic results (title, link, snippet): the whole call within `timeout`, the answer at
        most `MAX_ANSWER_BYTES` once decoded (however many content-encoding layers it has)."""
        assert self._api_key is not None
        answer = await self.answer("POST", f"{self.base_url}/search", headers={"X-API-KEY": self._api_key.reveal()},
                                   json={"q": self.engine_query(query), "num": self.num_results, **self.params})
        if answer.status >= 400:
            raise self.http_error(answer)
        data = answer.json_object(self.engine_name)
        problem = data.get("error") or (data.get("message") if "organic" not in data else None)
        if problem:
            raise WebSearchError(f"Serper error: {self.scrub(str(problem))[:300]}")
        organic = data.get("organic") or []
        if not isinstance(organic, list):
            raise WebSearchError(f"Serper answered with malformed organic results ({type(organic).__name__})")
        return organic
