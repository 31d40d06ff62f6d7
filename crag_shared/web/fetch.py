"""Concurrent, bounded, SSRF-guarded page fetching with httpx: one slow or hostile page never stalls a query."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, TypeVar
from urllib.parse import urljoin, urlsplit

import certifi
import httpx

T = TypeVar("T")

DEFAULT_USER_AGENT = ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
                      "Chrome/126.0 Safari/537.36 crag/0.1")
TEXT_TYPES = frozenset({"text/html", "application/xhtml+xml", "text/plain"})
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


@dataclass(frozen=True)
class FetchedPage:
    """One URL's outcome: decoded text, or `error` saying why there is none."""

    url: str
    final_url: str = ""
    status: int | None = None
    content_type: str = ""
    text: str | None = None
    truncated: bool = False
    error: str | None = None
    title: str = ""
    paragraphs: tuple[str, ...] = ()


@lru_cache(maxsize=1)
def _ssl_context() -> ssl.SSLContext:
    """Building a verifying SSL context costs ~40 ms; every client shares one."""
    return ssl.create_default_context(cafile=certifi.where())


class _Refused(Exception):
    pass


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine from sync code, also when an event loop is already running (Jupyter)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def _is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%")[0])
    return not (ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_multicast or ip.is_reserved
                or ip.is_unspecified)


class PageFetcher:
    """Fetches many pages at once, within limits.

    - `concurrency` requests at a time; `timeout` seconds per request; the whole batch ends at
      `deadline` seconds, unfinished pages reported as such;
    - bodies are streamed and cut at `max_bytes`; only HTML and plain text are read (PDFs and the rest
      are skipped with a reason); at most `max_redirects` redirects, loops detected;
    - 429 and 5xx are retried `retries` times with exponential backoff, while the deadline allows;
    - the charset comes from the headers, else it is detected; undecodable bytes are replaced;
    - hosts resolving to loopback, private, link-local, multicast or reserved addresses are refused
      before any connection, on every redirect hop, unless `allow_private_addresses=True` or the
      address lies in one of the networks it lists (e.g. `["127.0.0.1/32"]` for a local test server).
    `transport` is the httpx seam for tests and custom networking.
    """

    def __init__(self, *, concurrency: int = 5, timeout: float = 5.0, deadline: float = 10.0,
                 max_bytes: int = 3_000_000, max_redirects: int = 5, retries: int = 2, backoff: float = 0.25,
                 user_agent: str = DEFAULT_USER_AGENT, allow_private_addresses: bool | Sequence[str] = False,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        if concurrency < 1 or timeout <= 0 or deadline <= 0 or max_bytes < 1 or max_redirects < 0 or retries < 0:
            raise ValueError("concurrency, timeout, deadline and max_bytes must be positive; "
                             "max_redirects and retries non-negative")
        self.concurrency = concurrency
        self.timeout = timeout
        self.deadline = deadline
        self.max_bytes = max_bytes
        self.max_redirects = max_redirects
        self.retries = retries
        self.backoff = backoff
        self.user_agent = user_agent
        self.allow_private_addresses = allow_private_addresses
        self._allowed_networks = ([] if isinstance(allow_private_addresses, bool) else
                                  [ipaddress.ip_network(n, strict=False) for n in allow_private_addresses])
        self.transport = transport

    def fetch_all_sync(self, urls: Sequence[str]) -> list[FetchedPage]:
        return run_sync(self.fetch_all(urls))

    async def fetch_all(self, urls: Sequence[str],
                        process: Callable[[FetchedPage], Awaitable[FetchedPage]] | None = None) -> list[FetchedPage]:
        """Fetch `urls` concurrently; results come back in input order, one per URL, never raising.

        `process` (e.g. text extraction) runs on each successful page as soon as it arrives, inside
        the same deadline, so slow pages do not hold up work on fast ones.
        """
        if not urls:
            return []
        ends_at = time.monotonic() + self.deadline
        gate = asyncio.Semaphore(self.concurrency)
        async with httpx.AsyncClient(headers={"User-Agent": self.user_agent}, transport=self.transport,
                                     timeout=self.timeout, follow_redirects=False, verify=_ssl_context()) as client:

            async def one(url: str) -> FetchedPage:
                async with gate:
                    try:
                        page = await self._fetch(client, url, ends_at)
                    except _Refused as refused:
                        return FetchedPage(url, error=str(refused))
                    except httpx.TimeoutException:
                        return FetchedPage(url, error=f"timed out after {self.timeout:g} s")
                    except httpx.HTTPError as error:
                        return FetchedPage(url, error=f"{type(error).__name__}: {error}")
                if process is None or page.error:
                    return page
                try:
                    return await process(page)
                except Exception as error:  # a page that breaks the extractor is one failed page, no more
                    return replace(page, error=f"extraction failed: {type(error).__name__}: {error}")

            tasks = [asyncio.ensure_future(one(url)) for url in urls]
            done, pending = await asyncio.wait(tasks, timeout=max(0.0, ends_at - time.monotonic()))
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)
        late = f"not finished within the {self.deadline:g} s deadline"
        return [t.result() if t in done else FetchedPage(u, error=late) for t, u in zip(tasks, urls)]

    async def _guard(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise _Refused(f"refused: not an http(s) URL: {url[:200]}")
        if self.allow_private_addresses is True:
            return
        host = parts.hostname
        try:
            addresses = [host] if _is_ip(host) else [info[4][0] for info in await asyncio.get_running_loop()
                                                      .getaddrinfo(host, parts.port or 443, type=socket.SOCK_STREAM)]
        except OSError as error:
            raise _Refused(f"cannot resolve {host}: {error}") from error
        blocked = [a for a in addresses if not _is_public(a) and not self._allowed(a)]
        if blocked:
            raise _Refused(f"refused: {host} resolves to a non-public address ({blocked[0]}); "
                           "set allow_private_addresses=True to allow it")

    async def _fetch(self, client: httpx.AsyncClient, url: str, ends_at: float) -> FetchedPage:
        original, seen = url, {url}
        for _ in range(self.max_redirects + 1):
            await self._guard(url)
            for attempt in range(self.retries + 1):
                async with client.stream("GET", url) as response:
                    if response.is_redirect and "location" in response.headers:
                        target = urljoin(url, response.headers["location"])
                        if target in seen:
                            return FetchedPage(original, url, response.status_code, error=f"redirect loop at {target}")
                        seen.add(target)
                        url = target
                        break
                    pause = self.backoff * 2 ** attempt
                    if (response.status_code in RETRY_STATUSES and attempt < self.retries
                            and time.monotonic() + pause < ends_at):
                        await asyncio.sleep(pause)
                        continue
                    return await self._read(original, url, response)
        return FetchedPage(original, url, error=f"more than {self.max_redirects} redirects")

    async def _read(self, original: str, url: str, response: httpx.Response) -> FetchedPage:
        status = response.status_code
        content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if status >= 400:
            return FetchedPage(original, url, status, content_type, error=f"HTTP {status}")
        if content_type and content_type not in TEXT_TYPES:
            return FetchedPage(original, url, status, content_type, error=f"skipped content type {content_type}")
        body, truncated = bytearray(), False
        async for chunk in response.aiter_bytes():
            body.extend(chunk)
            if len(body) >= self.max_bytes:
                del body[self.max_bytes:]
                truncated = True
                break
        if not body.strip():
            return FetchedPage(original, url, status, content_type, error="empty body")
        return FetchedPage(original, url, status, content_type or "text/html",
                           _decode(bytes(body), response.charset_encoding), truncated)

    def _allowed(self, address: str) -> bool:
        ip = ipaddress.ip_address(address.split("%")[0])
        return any(ip in network for network in self._allowed_networks)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _decode(body: bytes, declared: str | None) -> str:
    """Declared charset first, then detection; bytes that still do not decode are replaced."""
    if declared:
        try:
            return body.decode(declared)
        except (LookupError, UnicodeDecodeError):
            pass
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    best = from_bytes(body[:200_000]).best()
    return body.decode(best.encoding if best else "utf-8", errors="replace")
