"""Caches of what is computed from texts, bounded by the characters they keep and not only by their entries.

`functools.lru_cache(maxsize=N)` bounds the number of entries, not their size: keyed on whole passages, 20,000
entries of 1 MB texts keep gigabytes, and what is kept for each (sentence spans, n-gram sets, token tuples) grows
with the text too. `text_cache` keeps the most recently used results up to `max_chars` characters of the texts
they were computed from, and computes a text longer than `entry_chars` without keeping it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from functools import update_wrapper
from typing import Generic, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class TextCacheInfo:
    """What a text cache holds: calls answered from it, calls computed, entries, and the characters they keep."""

    hits: int
    misses: int
    entries: int
    chars: int


class TextCache(Generic[P, R]):
    """`function` with its results for the texts (the `str` arguments) seen last, up to `max_chars` characters of
    them and `max_entries` entries; a call whose texts are longer than `entry_chars` is computed and not kept."""

    def __init__(self, function: Callable[P, R], *, max_chars: int, entry_chars: int, max_entries: int) -> None:
        if not 0 < entry_chars <= max_chars or max_entries < 1:
            raise ValueError("a text cache needs 0 < entry_chars <= max_chars and max_entries >= 1")
        update_wrapper(self, function)
        self._function = function
        self.max_chars, self.entry_chars, self.max_entries = max_chars, entry_chars, max_entries
        self._entries: OrderedDict[Hashable, tuple[R, int]] = OrderedDict()
        self._chars = self._hits = self._misses = 0
        self._lock = threading.Lock()

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        key = (args, tuple(sorted(kwargs.items()))) if kwargs else args
        with self._lock:
            kept = self._entries.get(key)
            if kept is not None:
                self._entries.move_to_end(key)
                self._hits += 1
                return kept[0]
            self._misses += 1
        result = self._function(*args, **kwargs)  # outside the lock, as lru_cache: two threads may both compute
        size = sum(len(value) for value in (*args, *kwargs.values()) if isinstance(value, str))
        if size > self.entry_chars:
            return result
        with self._lock:
            if key not in self._entries:
                self._entries[key] = (result, size)
                self._chars += size
                while self._chars > self.max_chars or len(self._entries) > self.max_entries:
                    self._chars -= self._entries.popitem(last=False)[1][1]
        return result

    def cache_info(self) -> TextCacheInfo:
        """Hits, misses, entries and the characters of text the entries were computed from."""
        with self._lock:
            return TextCacheInfo(self._hits, self._misses, len(self._entries), self._chars)

    def cache_clear(self) -> None:
        """Forget every entry and the counts."""
        with self._lock:
            self._entries.clear()
            self._chars = self._hits = self._misses = 0


def text_cache(*, max_chars: int, entry_chars: int, max_entries: int = 100_000
               ) -> Callable[[Callable[P, R]], TextCache[P, R]]:
    """A decorator: `TextCache` of the function, with these bounds."""

    def wrap(function: Callable[P, R]) -> TextCache[P, R]:
        return TextCache(function, max_chars=max_chars, entry_chars=entry_chars, max_entries=max_entries)

    return wrap
