"""Running the user's synchronous code (evaluators, LLM functions, search clients) off the event loop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


async def in_thread(fn: Callable[..., T], *args: Any) -> T:
    """`asyncio.to_thread(fn, *args)`, except that a `StopIteration` out of `fn` arrives as a `RuntimeError`
    naming it: a StopIteration cannot travel through a Future, and the awaiting task would wait forever."""
    def call() -> T:
        try:
            return fn(*args)
        except StopIteration as error:
            raise RuntimeError(f"{getattr(fn, '__qualname__', fn)!s} raised StopIteration") from error

    return await asyncio.to_thread(call)
