"""Exa's search API through its official client (`pip install exa-py`), async on httpx."""

from __future__ import annotations

import asyncio
import re
import weakref
from typing import Any

import httpx

from ..aio import close_with_loop
from .base import MAX_ANSWER_BYTES, WebSearchError
from .decoding import BoundedDecoder, EncodingError
from .fetch import ssl_context
from .http_search import HttpxSearch
from .keys import ApiKey

_STATUS = re.compile(r"status code (\d{3})")
ADVICE = {401: "the API key was refused: check EXA_API_KEY", 402: "the account is out of credits",
          403: "this key may not use this endpoint", 429: "rate limit reached; retry later",
          400: "Exa refused the request's parameters"}


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


class ExaSearch(HttpxSearch):
    """Web search over Exa: key from `api_key` or `EXA_API_KEY` (required at construction).

    Exa returns each page's text with its results (`text=True`, the default): with
    `use_provider_content=True` (default) that text is refined as it is and the page is not fetched.
    `num_results`, `type` ("auto", "neural", "keyword", "fast"), `category`, `include_domains`,
    `exclude_domains` and `params` pass through; `base_url` points the client elsewhere; `transport` is
    the httpx seam. The official async client runs on one bounded httpx client per event loop. Other
    options (mode, fetching, timeout, concurrency): see `FetchingSearch`.
    """

    engine_name = "Exa"

    def __init__(self, api_key: str | None = None, *, num_results: int = 10, type: str = "auto",
                 category: str | None = None, include_domains: list[str] | None = None,
                 exclude_domains: list[str] | None = None, text: bool = True, params: dict[str, Any] | None = None,
                 base_url: str = "https://api.exa.ai", **options: Any) -> None:
        from .extras import require

        require("exa_py", "ExaSearch", "exa-py")
        super().__init__(api_key=ApiKey(api_key, "EXA_API_KEY", "ExaSearch"), **options)
        self.base_url = base_url.rstrip("/")
        self.params = {k: v for k, v in {
            "num_results": num_results, "type": type, "category": category, "include_domains": include_domains,
            "exclude_domains": exclude_domains, "contents": {"text": True} if text else None}.items()
            if v is not None} | (params or {})

    def __repr__(self) -> str:
        return f"ExaSearch(params={self.params!r}, base_url={self.base_url!r})"

    def _exa(self) -> Any:
        """The official async client of the running loop, its HTTP client bounded and closed with the loop's."""
        from exa_py import AsyncExa

        provider = self
        clients = self.shared("exa", weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any])
        loop = asyncio.get_running_loop()
        if loop not in clients:
            inner = self.transport or httpx.AsyncHTTPTransport(verify=ssl_context())
            bounded = httpx.AsyncClient(transport=BoundedTransport(inner), timeout=self.timeout, trust_env=False)

            class BoundedExa(AsyncExa):
                @property
                def client(self) -> httpx.AsyncClient:
                    return bounded

            assert provider._api_key is not None
            clients[loop] = BoundedExa(api_key=provider._api_key.reveal(), api_base=self.base_url,
                                       timeout=self.timeout)
            close_with_loop(bounded.aclose)
        return clients[loop]

    async def aorganic_results(self, query: str) -> list[dict[str, Any]]:
        """Exa's results as (title, link, snippet, content), or WebSearchError."""
        exa = self._exa()
        try:
            async with self.gate():
                answer = await asyncio.wait_for(exa.search(self.engine_query(query), **self.params), self.timeout)
        except WebSearchError:
            raise
        except (asyncio.TimeoutError, httpx.TimeoutException):
            raise WebSearchError(f"Exa timed out: no complete answer within {self.timeout:g} s") from None
        except Exception as error:  # the client's errors carry the status and the body: say what to change
            found = _STATUS.search(str(error))
            hint = ADVICE.get(int(found.group(1)), "") if found else ""
            hint = hint or ("answered with malformed JSON" if "JSON" in str(error) else "")
            message = f"Exa {type(error).__name__}{': ' + hint if hint else ''}: {error}"
            raise WebSearchError(self.scrub(message)[:400]) from None
        return [{"title": r.title, "link": r.url, "snippet": (r.text or "")[:300], "content": r.text or ""}
                for r in getattr(answer, "results", None) or []]
