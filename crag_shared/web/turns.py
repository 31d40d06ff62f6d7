"""Turns: at most N searches at a time across every thread and event loop of the process, first come first served.

A provider's searches may come from one event loop (`asearch` gathered by the hundred), from many threads
each running its own loop (`search` from a thread pool), or both. An `asyncio.Semaphore` gates one loop
only, and a gate whose wait counts against the search's timeout fails searches that merely queued behind
others: with 64 at a time and an engine answering in 2 s, only 256 of 500 concurrent searches would get an
answer within a 10 s timeout. A search's clock starts at its turn (`FetchingSearch.asearch`), so none fails for
waiting, and a waiter holds no thread.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from types import TracebackType


class Turns:
    """At most `size` holders at a time, from any event loop in any thread (`async with turns:`), in the
    order they asked. A waiter cancelled before or while its turn arrives passes the turn on."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"size must be at least 1, got {size}")
        self.size = size
        self._held = 0
        self._lock = threading.Lock()
        self._waiting: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()

    @property
    def held(self) -> int:
        """Turns held now."""
        return self._held

    async def __aenter__(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._held < self.size and not self._waiting:
                self._held += 1
                return
            future: asyncio.Future[None] = loop.create_future()
            self._waiting.append((loop, future))
        try:
            await future
        except asyncio.CancelledError:
            with self._lock:
                waiting = (loop, future) in self._waiting
                if waiting:
                    self._waiting.remove((loop, future))
            if not waiting and future.done() and not future.cancelled():
                self.release()  # the turn arrived as the waiter was cancelled: pass it on
            raise  # (a turn still on its way finds the future cancelled and passes itself on: `_grant`)

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        self.release()

    def release(self) -> None:
        """End one turn: the longest waiter whose loop still runs gets it, else it is free."""
        with self._lock:
            while self._waiting:
                loop, future = self._waiting.popleft()
                try:
                    loop.call_soon_threadsafe(self._grant, future)
                except RuntimeError:  # that waiter's loop is closed
                    continue
                return
            self._held -= 1

    def _grant(self, future: asyncio.Future[None]) -> None:
        """On the waiter's loop: its turn, unless it was cancelled meanwhile (then the next waiter's)."""
        if future.done():
            self.release()
        else:
            future.set_result(None)
