"""Concurrent, bounded, SSRF-guarded page fetching with httpx: one slow or hostile page never stalls a query."""

from __future__ import annotations

import asyncio
import codecs
import ssl
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from urllib.parse import urljoin, urlsplit

import certifi
import httpx

from ..aio import run_sync
from .decoding import ACCEPT_ENCODING, BoundedDecoder, EncodingError
from .guard import AddressPolicy, PinnedTransport, Refused, literal_ip

__all__ = ["FetchedPage", "PageFetcher", "sniff", "ssl_context"]

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
def ssl_context() -> ssl.SSLContext:
    """Building a verifying SSL context costs ~40 ms; every client shares one."""
    return ssl.create_default_context(cafile=certifi.where())


class PageFetcher:
    """Fetches many pages at once, within limits.

    - `concurrency` requests at a time; `timeout` seconds per request; the whole batch ends at
      `deadline` seconds, unfinished pages reported as such;
    - bodies are streamed and cut at `max_bytes` decoded bytes, a cap that holds on every content-encoding
      layer (gzip, deflate; others are refused); only HTML and plain text are read (PDFs and the rest are
      skipped with a reason; a body without a content type is sniffed); at most `max_redirects`
      redirects, loops detected;
    - 429 and 5xx are retried `retries` times with exponential backoff, while the deadline allows;
    - the charset comes from the headers, else it is detected; undecodable bytes are replaced;
    - hosts resolving to any address that is not globally reachable (loopback, private, CGNAT, link-local,
      multicast, reserved, documentation, IPv6 forms embedding such an IPv4) are refused, unless
      `allow_private_addresses=True` or the address lies in a network it lists (e.g. `["127.0.0.1/32"]`
      for a local test server). Each name is resolved once per connection and the connection goes to the
      address that was checked (see `guard`), on every redirect hop, so DNS rebinding cannot reach
      an internal host; environment proxies are not used;
    - a malformed URL or redirect target fails that page alone, with its reason.
    `transport` is the httpx seam for tests and custom networking; with one, names are checked before
    each request but the connection is the transport's own, so pinning is up to it.
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
        self.policy = AddressPolicy(allow_private_addresses)
        self.transport = transport

    def fetch_all_sync(self, urls: Sequence[str]) -> list[FetchedPage]:
        """`fetch_all` from synchronous code (its own event loop in a worker thread when one runs)."""
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
        transport = self.transport or PinnedTransport(self.policy, ssl_context())
        headers = {"User-Agent": self.user_agent, "Accept-Encoding": ACCEPT_ENCODING}
        async with httpx.AsyncClient(headers=headers, transport=transport, timeout=self.timeout,
                                     follow_redirects=False, trust_env=False) as client:

            async def one(url: str) -> FetchedPage:
                async with gate:
                    try:
                        page = await self._fetch(client, url, ends_at)
                    except Refused as refused:
                        return FetchedPage(url, error=str(refused))
                    except httpx.TimeoutException:
                        return FetchedPage(url, error=f"timed out after {self.timeout:g} s")
                    except (httpx.HTTPError, httpx.InvalidURL, EncodingError) as error:
                        return FetchedPage(url, error=f"{type(error).__name__}: {error}")
                    except Exception as error:  # never raising: one hostile URL fails alone
                        return FetchedPage(url, error=f"unexpected {type(error).__name__}: {error}")
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
        """Refuse what is not a well-formed http(s) URL; with a custom transport, also check its addresses."""
        try:
            parts = urlsplit(url)
            port = parts.port or (443 if parts.scheme == "https" else 80)
            httpx.URL(url)
        except (ValueError, httpx.InvalidURL) as error:
            raise Refused(f"refused: malformed URL {url[:200]!r} ({error})") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise Refused(f"refused: not an http(s) URL: {url[:200]}")
        if literal_ip(parts.hostname) is not None:
            self.policy.check(parts.hostname, [str(literal_ip(parts.hostname))])
        elif self.transport is not None:
            await self.policy.resolve(parts.hostname, port)

    async def _fetch(self, client: httpx.AsyncClient, url: str, ends_at: float) -> FetchedPage:
        original, seen = url, {url}
        for _ in range(self.max_redirects + 1):
            await self._guard(url)
            for attempt in range(self.retries + 1):
                async with client.stream("GET", url) as response:
                    if response.is_redirect and "location" in response.headers:
                        try:
                            target = urljoin(url, response.headers["location"])
                        except ValueError as error:
                            return FetchedPage(original, url, response.status_code,
                                               error=f"malformed redirect target ({error})")
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
        decoder = BoundedDecoder(response.headers.get("content-encoding", ""), self.max_bytes)
        body, raw_bytes = bytearray(), 0
        async for chunk in response.aiter_raw():
            raw_bytes += len(chunk)
            body.extend(decoder.feed(chunk))
            if decoder.full or raw_bytes >= self.max_bytes:
                break
            await asyncio.sleep(0)  # let other pages run between chunks
        truncated = decoder.full or raw_bytes >= self.max_bytes
        if not body.strip():
            return FetchedPage(original, url, status, content_type, error="empty body")
        if not content_type:
            content_type = sniff(bytes(body[:4096]))
            if not content_type:
                return FetchedPage(original, url, status, error="no content type, and the body is not text")
        text = await asyncio.to_thread(_decode, bytes(body), response.charset_encoding)  # CPU: off the loop
        return FetchedPage(original, url, status, content_type, text, truncated)


def _charset(name: str) -> bool:
    """Whether `name` is a character set to decode a page with (a known text codec, not in `NOT_CHARSETS`)."""
    try:
        return codecs.lookup(name).name.replace("-", "_") not in NOT_CHARSETS
    except LookupError:
        return False


def sniff(head: bytes) -> str:
    """The type of a body served without Content-Type: HTML if it looks like markup, plain text if it
    has no binary control bytes, else '' (binary, not read)."""
    controls = sum(1 for b in head if b < 9 or 13 < b < 32)
    if controls > len(head) // 100:
        return ""
    start = head.lstrip()[:64].lower()
    markup = (b"<!doctype html", b"<html", b"<head", b"<body", b"<p", b"<div", b"<?xml", b"<!--")
    return "text/html" if start.startswith(markup) else "text/plain"


#: Codecs Python decodes as text that are no character sets a page can be written in; some take time
#: that grows with the square of the input (punycode: 25 s for 500 KB). A page declaring one is decoded
#: as if it had declared nothing.
NOT_CHARSETS = frozenset({"punycode", "idna", "unicode_escape", "raw_unicode_escape", "undefined"})


def _decode(body: bytes, declared: str | None) -> str:
    """Declared charset first (a real one: `NOT_CHARSETS` are ignored), then detection; bytes that still do
    not decode are replaced."""
    if declared and _charset(declared):
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
