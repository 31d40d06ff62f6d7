"""The tiny LLM protocol the core needs (prompt in, text out); each framework adapts its own LLM to it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

from .aio import in_thread


class NoLLMConfigured(LookupError):
    """Raised by an adapter's LLM wrapper when the user configured no LLM: the rewriter then uses its
    offline keywords, the documented default, without recording a fallback."""


@runtime_checkable
class LLM(Protocol):
    """What crag needs of an LLM: a prompt in, text out, sync and async. Each adapter wraps its framework's LLM."""
    def complete(self, prompt: str) -> str:
        """The model's text for `prompt`."""
        ...

    async def acomplete(self, prompt: str) -> str:
        """Async `complete`."""
        ...


class FunctionLLM:
    """Adapts plain functions to the `LLM` protocol (handy for tests and for custom clients).

    Without `async_fn`, `acomplete` runs `fn` in a worker thread so the event loop is never blocked.
    """

    def __init__(self, fn: Callable[[str], str], async_fn: Callable[[str], Awaitable[str]] | None = None) -> None:
        self._fn = fn
        self._async_fn = async_fn

    def complete(self, prompt: str) -> str:
        """Call the wrapped function."""
        return self._fn(prompt)

    async def acomplete(self, prompt: str) -> str:
        """Call the wrapped function in a worker thread."""
        if self._async_fn is not None:
            return await self._async_fn(prompt)
        return await in_thread(self._fn, prompt)


def check_llm(llm: object) -> LLM:
    """`llm` if it has `complete` and `acomplete`; a TypeError naming what it lacks otherwise."""
    if not isinstance(llm, LLM):
        raise TypeError(f"llm must provide complete(prompt) and acomplete(prompt), got {type(llm).__name__}")
    return llm
