"""Running the user's synchronous code off the event loop, and coroutines from synchronous code."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

#: Async closers of resources bound to one event loop (a provider's HTTP client), run when `run_sync` ends it.
_AT_LOOP_END: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, list[Callable[[], Awaitable[object]]]] = (
    weakref.WeakKeyDictionary())


async def in_thread(fn: Callable[..., T], *args: Any, executor: Executor | None = None) -> T:
    """`asyncio.to_thread(fn, *args)` on `executor` (default: the loop's), except that a `StopIteration` out
    of `fn` arrives as a `RuntimeError` naming it: a StopIteration cannot travel through a Future, and the
    awaiting task would wait forever."""
    def call() -> T:
        try:
            return fn(*args)
        except StopIteration as error:
            raise RuntimeError(f"{getattr(fn, '__qualname__', fn)!s} raised StopIteration") from error

    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(executor, functools.partial(context.run, call))


def close_with_loop(aclose: Callable[[], Awaitable[object]]) -> None:
    """Run `aclose()` when the running loop ends, if `run_sync` made it; a caller's own loop keeps the
    resource for its lifetime."""
    _AT_LOOP_END.setdefault(asyncio.get_running_loop(), []).append(aclose)


async def _closing(coroutine: Coroutine[Any, Any, T]) -> T:
    try:
        return await coroutine
    finally:
        for aclose in _AT_LOOP_END.pop(asyncio.get_running_loop(), []):
            await aclose()


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine from sync code, also when an event loop is already running (Jupyter); what was bound
    to its loop with `close_with_loop` is closed before the loop ends."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        running = False  # run below, outside the handler: the coroutine's errors carry no chain back to it
    else:
        running = True
    if not running:
        return asyncio.run(_closing(coroutine))
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, _closing(coroutine)).result()
