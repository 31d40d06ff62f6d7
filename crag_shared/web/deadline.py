"""A whole-call deadline for blocking `requests` calls (the official `serpapi` client is built on them).

requests' `timeout` bounds each socket read, not the call: an endpoint that sends its headers a byte every
half second keeps a thread reading for as long as it likes. Here every socket a call reads from is
registered with the call's `Deadline`; when it passes, the sockets are shut down, so the blocked read
returns at once and the worker thread is free again. Only public urllib3 and requests interfaces are used:
the pool classes a `PoolManager` builds, a connection's `connect`/`getresponse`, `HTTPAdapter`'s hooks.
"""

from __future__ import annotations

import contextlib
import io
import socket
import threading
import time
from abc import abstractmethod
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

import requests
from urllib3 import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.connection import HTTPConnection, HTTPSConnection

from .base import MAX_ANSWER_BYTES, WebSearchError
from .decoding import BoundedDecoder, EncodingError
from .search_engine import FetchingSearch

__all__ = ["Deadline", "RequestsSearch", "call_by", "deadline_session"]

T = TypeVar("T")

_current = threading.local()


class Deadline:
    """The sockets one call reads from, shut down once `seconds` have passed (a context manager, per thread)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started = time.monotonic()
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(0.0, seconds), self.expire)
        self._timer.daemon = True

    def __enter__(self) -> Deadline:
        _current.deadline = self
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        _current.deadline = None

    @property
    def elapsed(self) -> float:
        """Seconds since the call began."""
        return time.monotonic() - self.started

    def watch(self, sock: socket.socket | None) -> None:
        """Shut `sock` down at the deadline (at once if it has passed)."""
        if sock is None:
            return
        with self._lock:
            if self.expired:
                _shut(sock)
            else:
                self._sockets.append(sock)

    def expire(self) -> None:
        """The deadline has passed: every watched socket stops reading."""
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _watch_current(sock: socket.socket | None) -> None:
    deadline = current_deadline()
    if deadline is not None:
        deadline.watch(sock)


class _Watched:
    """Mixed into urllib3's connections: the socket joins the calling thread's deadline when it is opened
    and whenever a response is awaited on it (a pooled connection serves many calls)."""

    sock: socket.socket | None

    def connect(self) -> None:
        super().connect()  # type: ignore[misc]
        _watch_current(self.sock)

    def getresponse(self, *args: Any, **kwargs: Any) -> Any:
        _watch_current(self.sock)
        return super().getresponse(*args, **kwargs)  # type: ignore[misc]


class _WatchedHTTPConnection(_Watched, HTTPConnection):
    pass


class _WatchedHTTPSConnection(_Watched, HTTPSConnection):
    pass


class _WatchedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


_POOLS = {"http": _WatchedHTTPPool, "https": _WatchedHTTPSPool}


class DeadlineAdapter(requests.adapters.HTTPAdapter):
    """A requests transport whose connections honour the calling thread's `Deadline` (SOCKS proxies excepted:
    their connections are the proxy library's own), and whose answers are read within `MAX_ANSWER_BYTES`
    once decoded, however many content-encoding layers they have."""

    def send(self, request: requests.PreparedRequest, stream: bool = False,
             timeout: float | tuple[float | None, float | None] | None = None, verify: bool | str = True,
             cert: str | tuple[str, str] | None = None, proxies: dict[str, str] | None = None) -> requests.Response:
        """Send, then read the body bounded and hand requests the decoded bytes through `Response.raw`. A
        redirect from the search API is refused, as the httpx providers refuse it: an API that answers with
        one is misconfigured or compromised, and its target (a metadata address, say) is never asked."""
        response = super().send(request, stream=True, timeout=timeout, verify=verify, cert=cert, proxies=proxies)
        if response.is_redirect:
            response.close()
            raise WebSearchError(f"{_host(request.url or '')} answered with a redirect (HTTP {response.status_code}"
                                 f"); crag does not follow a search API's redirects")
        if stream:
            return response
        decoder = BoundedDecoder(response.headers.get("content-encoding", ""), MAX_ANSWER_BYTES + 1)
        body = bytearray()
        try:
            while chunk := response.raw.read(65536, decode_content=False):
                body.extend(decoder.feed(chunk))
                if decoder.full:
                    raise WebSearchError(f"an answer larger than {MAX_ANSWER_BYTES} bytes from "
                                         f"{_host(request.url or '')}")
        except EncodingError as error:
            raise WebSearchError(f"an unreadable answer: {error}") from None
        finally:
            response.close()
        response.raw = io.BytesIO(bytes(body))
        response.headers.pop("content-encoding", None)
        return response

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        """The pool manager, building watched connection pools."""
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _POOLS

    def proxy_manager_for(self, proxy: str, **kwargs: Any) -> Any:
        """The HTTP(S) proxy's manager, building watched connection pools."""
        manager = super().proxy_manager_for(proxy, **kwargs)
        if not proxy.lower().startswith("socks"):
            manager.pool_classes_by_scheme = _POOLS
        return manager


def deadline_session(pool_size: int) -> requests.Session:
    """A session whose calls end by the calling thread's `Deadline`, keeping up to `pool_size` connections."""
    session = requests.Session()
    adapter = DeadlineAdapter(pool_connections=4, pool_maxsize=pool_size)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def _host(url: str) -> str:
    return urlsplit(url).hostname or "?"


def call_by(ends_at: float, timeout: float, engine: str, call: Callable[[], T]) -> T:
    """`call()` (a blocking client call through a `deadline_session`) ended by `ends_at`: its sockets are
    shut then, and it is a `WebSearchError` saying when it gave up."""
    started = ends_at - timeout
    if time.monotonic() >= ends_at:
        raise WebSearchError(f"{engine} timed out: no free worker within {timeout:g} s")
    with Deadline(ends_at - time.monotonic()) as deadline:
        try:
            answer = call()
        except Exception:
            if not deadline.expired:
                raise
        if deadline.expired:
            raise WebSearchError(f"{engine} timed out: no complete answer within {timeout:g} s "
                                 f"(gave up after {time.monotonic() - started:.1f} s)")
    return answer


class RequestsSearch(FetchingSearch):
    """A provider whose official client is built on requests: each call, sync or async, ends by its own
    deadline, counted from the call (queue time included), through a `deadline_session` and `call_by`;
    async calls run on the provider's worker threads. Subclasses implement `results_by(query, ends_at)`."""

    def organic_results(self, query: str) -> list[dict[str, Any]]:
        """The engine's results for `query`, or WebSearchError."""
        return self.results_by(query, time.monotonic() + self.timeout)

    async def aorganic_results(self, query: str) -> list[dict[str, Any]]:
        """Async `organic_results`, on this provider's worker threads."""
        return await self.in_workers(self.results_by, query, time.monotonic() + self.timeout)

    @abstractmethod
    def results_by(self, query: str, ends_at: float) -> list[dict[str, Any]]:
        """One search, over by `ends_at` (`time.monotonic()`)."""


def current_deadline() -> Deadline | None:
    """The calling thread's deadline, inside `with Deadline(...)`."""
    return getattr(_current, "deadline", None)
