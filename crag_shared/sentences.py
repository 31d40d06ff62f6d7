"""Sentence spans (sentence-splitter's Moses rules): what refinement cuts strips from and evaluators score by."""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from typing import Any


class _CompiledRegex:
    """Stands in for the `regex` module inside sentence_splitter, with each pattern compiled once.

    sentence-splitter calls `regex.search(pattern=..., string=word)` for every word of a text. The `regex`
    module then looks its cache up again on each call, doing flag arithmetic on Python enums, which costs
    about ten times the match itself: it made sentence splitting 75 % of a lexical CRAG decision. The
    patterns and results are unchanged (tested against the plain module); only the lookup is cheaper.
    """

    def __init__(self, module: Any) -> None:
        self._module = module
        self._patterns: dict[tuple[str, int], Any] = {}

    def _compiled(self, pattern: str, flags: int) -> Any:
        key = (pattern, int(flags))
        compiled = self._patterns.get(key)
        if compiled is None:
            compiled = self._patterns[key] = self._module.compile(pattern, flags)
        return compiled

    def search(self, pattern: str, string: str, flags: int = 0) -> Any:
        return self._compiled(pattern, flags).search(string)

    def match(self, pattern: str, string: str, flags: int = 0) -> Any:
        return self._compiled(pattern, flags).match(string)

    def sub(self, pattern: str, repl: str, string: str, count: int = 0, flags: int = 0) -> str:
        return self._compiled(pattern, flags).sub(repl, string, count=count)

    def split(self, pattern: str, string: str, maxsplit: int = 0, flags: int = 0) -> list[str]:
        return self._compiled(pattern, flags).split(string, maxsplit=maxsplit)

    def __getattr__(self, name: str) -> Any:  # flags and anything else: the real module's
        return getattr(self._module, name)


@lru_cache(maxsize=1)
def _private_sentence_splitter_module() -> Any:
    """A private copy of the sentence_splitter module whose `regex` compiles each pattern once.

    sentence-splitter calls `regex.search(pattern=...)` with the same patterns for every word; going
    through the regex module's cache each time dominated splitting. The copy is ours alone: the
    `sentence_splitter` module other code imports is left untouched."""
    import sentence_splitter

    spec = importlib.util.spec_from_file_location("crag_shared._sentence_splitter", sentence_splitter.__file__)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.__dict__["regex"] = _CompiledRegex(module.__dict__["regex"])
    return module


@lru_cache(maxsize=8)
def splitter_for(language: str) -> Any:
    """sentence-splitter's splitter for `language` (an unknown code raises here)."""
    return _private_sentence_splitter_module().SentenceSplitter(language=language)


@lru_cache(maxsize=8192)
def sentence_spans(language: str, text: str) -> tuple[tuple[int, int], ...]:
    """Character spans of the sentences of `text` (sentence-splitter's Moses rules).

    Cached: the same passages come back across queries."""
    spans, cursor = [], 0
    for sentence in splitter_for(language).split(text):
        if not sentence:
            continue
        start = text.find(sentence, cursor)
        if start < 0:  # the splitter normalised something; anchor on the first word instead
            first = sentence.split()[0]
            start = text.find(first, cursor)
            start = cursor if start < 0 else start
            end = min(len(text), start + len(sentence))
        else:
            end = start + len(sentence)
        spans.append((start, end))
        cursor = end
    return tuple(spans)
