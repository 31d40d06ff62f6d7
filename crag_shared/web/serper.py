"""Google through serper.dev (the API the official CRAG code used), over httpx."""

from __future__ import annotations

import asyncio
import json
import weakref
from typing import Any, Literal

import httpx

from ..aio import close_with_loop, run_sync
from .base import MAX_ANSWER_BYTES, WebSearchError
from .decoding import BoundedDecoder, EncodingError
from .fetch import PageFetcher, ssl_context
from .keys import ApiKey
from .search_engine import FetchingSearch

SERPER_URL = "https://google.serper.dev"


class SerperSearch(FetchingSearch):
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
        super().__init__(mode=mode, wiki_prefix=wiki_prefix, fetch_pages=fetch_pages, fetcher=fetcher,
                         min_paragraph_chars=min_paragraph_chars, max_paragraphs=max_paragraphs, timeout=timeout,
                         max_concurrent_searches=max_concurrent_searches)
        self._api_key = ApiKey(api_key, "SERPER_API_KEY", "SerperSearch")
        self.num_results = num_results
        self.params = {k: v for k, v in {"gl": gl, "hl": hl, "location": location}.items() if v}
        self.base_url = base_url.rstrip("/")
        self.transport = transport

    def __repr__(self) -> str:
        return f"SerperSearch(mode={self.mode!r}, base_url={self.base_url!r})"

    async def _answer(self, query: str) -> tuple[int, str]:
        """(HTTP status, body text) of one search, the body decoded within `MAX_ANSWER_BYTES`."""
        body = {"q": self.engine_query(query), "num": self.num_results, **self.params}
        headers = {"X-API-KEY": self._api_key.reveal()}
        client, gate = self._client()
        async with gate, client.stream("POST", f"{self.base_url}/search", json=body, headers=headers) as response:
            decoder = BoundedDecoder(response.headers.get("content-encoding", ""), MAX_ANSWER_BYTES + 1)
            data = bytearray()
            async for chunk in response.aiter_raw():
                data.extend(decoder.feed(chunk))
                if decoder.full:
                    raise WebSearchError(f"Serper's answer is larger than {MAX_ANSWER_BYTES} bytes")
            return response.status_code, data.decode(response.encoding or "utf-8", errors="replace")

    def _client(self) -> tuple[httpx.AsyncClient, asyncio.Semaphore]:
        """The HTTP client every call on the running loop shares (an httpx client belongs to one loop), and
        the gate that lets `max_concurrent_searches` calls at a time into it: httpcore's pool scans its
        whole queue on every release, so hundreds of calls queued there cost time growing with their
        square. One made for a `search()` from sync code is closed with the loop that call ran on."""
        clients = self.shared("clients", weakref.WeakKeyDictionary[asyncio.AbstractEventLoop,
                                                                   tuple[httpx.AsyncClient, asyncio.Semaphore]])
        loop = asyncio.get_running_loop()
        if loop not in clients or clients[loop][0].is_closed:
            limits = httpx.Limits(max_connections=self.max_concurrent_searches,
                                  max_keepalive_connections=self.max_concurrent_searches)
            client = httpx.AsyncClient(timeout=self.timeout, transport=self.transport, trust_env=False,
                                       verify=ssl_context(), limits=limits)
            clients[loop] = client, asyncio.Semaphore(self.max_concurrent_searches)
            close_with_loop(client.aclose)
        return clients[loop]

    def organic_results(self, query: str) -> list[dict[str, Any]]:
        """Serper's organic results for `query` (title, link, snippet), or WebSearchError."""
        return run_sync(self.aorganic_results(query))

    async def aorganic_results(self, query: str) -> list[dict[str, Any]]:
        """Async `organic_results`: the whole call within `timeout`, the answer at most `MAX_ANSWER_BYTES`
        once decoded (however many content-encoding layers it has)."""
        try:
            status, text = await asyncio.wait_for(self._answer(query), self.timeout)
        except (asyncio.TimeoutError, httpx.TimeoutException):
            raise WebSearchError(f"Serper timed out: no complete answer within {self.timeout:g} s") from None
        except EncodingError as error:
            raise WebSearchError(f"Serper answered with an unreadable body: {error}") from None
        except (httpx.HTTPError, httpx.InvalidURL) as error:
            raise WebSearchError(self._api_key.scrub(f"cannot reach Serper: {type(error).__name__}: {error}")) from None
        if status >= 400:
            raise WebSearchError(f"Serper HTTP {status}: {self._api_key.scrub(text)[:200]}")
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as error:
            message = f"Serper answered with malformed JSON: {type(error).__name__}: {error}"
            raise WebSearchError(message[:300]) from None
        if not isinstance(data, dict):
            raise WebSearchError(f"Serper answered with malformed JSON ({type(data).__name__}, not an object)")
        problem = data.get("error") or (data.get("message") if "organic" not in data else None)
        if problem:
            raise WebSearchError(f"Serper error: {self._api_key.scrub(str(problem))[:300]}")
        organic = data.get("organic") or []
        if not isinstance(organic, list):
            raise WebSearchError(f"Serper answered with malformed organic results ({type(organic).__name__})")
        return organic
