"""What the providers that speak to their engine over httpx share: one client per event loop, a gate on
concurrent calls, answers bounded in bytes and time, and one mapping of failures to `WebSearchError`."""

from __future__ import annotations

import asyncio
import json
import time
import weakref
from dataclasses import dataclass
from typing import Any

import httpx

from ..aio import close_with_loop, run_sync
from .base import MAX_ANSWER_BYTES, WebSearchError
from .decoding import ACCEPT_ENCODING, BoundedDecoder, EncodingError
from .fetch import ssl_context
from .keys import ApiKey
from .search_engine import FetchingSearch

__all__ = ["Answer", "HttpxSearch"]


@dataclass(frozen=True)
class Answer:
    """One answer of a search API: status, headers, and the body decoded within `MAX_ANSWER_BYTES`."""

    status: int
    headers: httpx.Headers
    text: str

    def json_object(self, engine: str) -> dict[str, Any]:
        """The body as a JSON object, or `WebSearchError` saying it is malformed."""
        try:
            data = json.loads(self.text)
        except (ValueError, RecursionError) as error:
            raise WebSearchError(f"{engine} answered with malformed JSON: {type(error).__name__}: {error}"[:300]
                                 ) from None
        if not isinstance(data, dict):
            raise WebSearchError(f"{engine} answered with malformed JSON ({type(data).__name__}, not an object)")
        return data


def retry_after(headers: httpx.Headers) -> str:
    """", retry after N s" when the answer says when (Retry-After, or X-RateLimit-Reset), else ""."""
    value = headers.get("retry-after") or headers.get("x-ratelimit-reset", "").split(",")[0]
    return f", retry after {value.strip()} s" if value.strip().isdigit() else ""


class BoundedTransport(httpx.AsyncBaseTransport):
    """Wraps a transport so every answer reaches the client decoded and at most `limit` bytes: a client
    that reads whole bodies (and undoes their content-encoding itself) cannot be flooded."""

    def __init__(self, inner: httpx.AsyncBaseTransport, limit: int = MAX_ANSWER_BYTES) -> None:
        self.inner = inner
        self.limit = limit

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """The inner transport's answer, read within `limit` decoded bytes."""
        response = await self.inner.handle_async_request(request)
        if response.is_stream_consumed:  # an in-memory answer (httpx.MockTransport reads it): nothing to bound
            return response
        try:
            decoder = BoundedDecoder(response.headers.get("content-encoding", ""), self.limit + 1)
            body = bytearray()
            async for chunk in response.aiter_raw():
                body.extend(decoder.feed(chunk))
                if decoder.full:
                    raise WebSearchError(f"an answer larger than {self.limit} bytes from {request.url.host}")
        except EncodingError as error:
            raise WebSearchError(f"an unreadable answer from {request.url.host}: {error}") from None
        finally:
            await response.aclose()
        headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in (
            "content-encoding", "content-length")]
        return httpx.Response(response.status_code, headers=headers, content=bytes(body), request=request)

    async def aclose(self) -> None:
        """Close the inner transport."""
        await self.inner.aclose()


class HttpxSearch(FetchingSearch):
    """A `FetchingSearch` whose engine is an HTTP API reached with httpx.

    Subclasses build the request in `aorganic_results` and call `answer()`; `api_key` (optional) is
    scrubbed from every message. One client per event loop serves every call on it (an httpx client
    belongs to one loop), with as many connections as searches take turns (`max_concurrent_searches`):
    the turns keep the waiting out of httpcore's pool, which scans its whole queue on every release, so
    hundreds of calls queued there would cost time growing with their square. The client's transport is a
    `BoundedTransport`: every answer arrives decoded within `MAX_ANSWER_BYTES`, also for an official client
    that reads whole bodies. A client made for a `search()` from sync code is closed with the loop that call
    ran on.
    `transport` is the httpx seam for tests.
    """

    def __init__(self, *, api_key: ApiKey | None = None, transport: httpx.AsyncBaseTransport | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._api_key = api_key
        self.transport = transport

    def scrub(self, text: str) -> str:
        """`text` without the key in any form."""
        return self._api_key.scrub(text) if self._api_key else text

    def _client(self) -> httpx.AsyncClient:
        clients = self.shared("clients", weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient])
        loop = asyncio.get_running_loop()
        if loop not in clients or clients[loop].is_closed:
            limits = httpx.Limits(max_connections=self.max_concurrent_searches,
                                  max_keepalive_connections=self.max_concurrent_searches)
            inner = self.transport or httpx.AsyncHTTPTransport(verify=ssl_context(), limits=limits)
            clients[loop] = httpx.AsyncClient(timeout=self.timeout, transport=BoundedTransport(inner),
                                              trust_env=False, headers={"Accept-Encoding": ACCEPT_ENCODING})
            close_with_loop(clients[loop].aclose)
        return clients[loop]

    async def _read(self, method: str, url: str, **request: Any) -> Answer:
        response = await self._client().request(method, url, **request)
        return Answer(response.status_code, response.headers, response.text)

    async def answer(self, method: str, url: str, **request: Any) -> Answer:
        """One request (httpx's `params`, `json`, `headers`...), its whole answer within `timeout` and
        `MAX_ANSWER_BYTES` decoded; unreachable, slow or unreadable answers are `WebSearchError`s."""
        started = time.monotonic()
        failure = None
        try:
            return await asyncio.wait_for(self._read(method, url, **request), self.timeout)
        except (asyncio.TimeoutError, httpx.TimeoutException):
            raise WebSearchError(f"{self.engine_name} timed out: no complete answer within {self.timeout:g} s "
                                 f"(gave up after {time.monotonic() - started:.1f} s)") from None
        except EncodingError as error:
            raise WebSearchError(f"{self.engine_name} answered with an unreadable body: {error}") from None
        except (httpx.HTTPError, httpx.InvalidURL) as error:
            message = f"cannot reach {self.engine_name}: {type(error).__name__}: {error}"
            failure = WebSearchError(self.scrub(message))
        raise failure  # outside the handler: no chain back to the client's error, which may carry the key

    def http_error(self, answer: Answer, advice: dict[int, str] | None = None) -> WebSearchError:
        """The error for a 4xx/5xx answer: status, what to change (`advice` by status), the body's start."""
        hint = (advice or {}).get(answer.status) or _ADVICE.get(answer.status, "")
        if answer.status == 429:
            hint += retry_after(answer.headers)
        body = " ".join(self.scrub(answer.text).split())[:200]
        return WebSearchError(f"{self.engine_name} HTTP {answer.status}{': ' + hint if hint else ''}"
                              f"{' (' + body + ')' if body else ''}")

    def organic_results(self, query: str) -> list[dict[str, Any]]:
        """The engine's results for `query` (title, link, snippet), or WebSearchError."""
        return run_sync(self.aorganic_results(query))


_ADVICE = {
    401: "the API key was refused: check it",
    403: "the API key may not use this endpoint or plan",
    429: "rate limit or quota reached",
    500: "the search service failed; try again later",
    502: "the search service is unreachable behind its gateway; try again later",
    503: "the search service is unavailable; try again later",
}
