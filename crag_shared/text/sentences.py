"""Sentence spans (sentence-splitter's Moses rules): what refinement cuts strips from and evaluators score by."""

from __future__ import annotations

import importlib.util
import re
from functools import lru_cache
from typing import Any

from .caching import text_cache

__all__ = ["READ_CHARS", "SPLITTER_LANGUAGES", "SPLIT_PIECE_CHARS", "sentence_spans", "splitter_for"]

#: The pattern sentence-splitter searches every word with, to find words ending in periods.
_PERIOD_WORD = r'([\w\.\-]*)([\'\"\)\]\%\p{Final_Punctuation}]*)(\.+)$'


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
        for name in dir(module):  # the flags as plain ints: no enum arithmetic, no __getattr__, per word
            if name.isupper() and isinstance(getattr(module, name), int):
                setattr(self, name, int(getattr(module, name)))

    def _compiled(self, pattern: str, flags: int) -> Any:
        key = (pattern, int(flags))
        compiled = self._patterns.get(key)
        if compiled is None:
            compiled = self._patterns[key] = self._module.compile(pattern, flags)
        return compiled

    def search(self, pattern: str, string: str, flags: int = 0) -> Any:
        if pattern == _PERIOD_WORD and not string.endswith((".", ".\n")):
            return None  # it ends in `(\.+)$`: no word without a final period (before a last newline) matches
        compiled = self._patterns.get((pattern, flags))  # the per-word hot path: one dict lookup
        return (compiled or self._compiled(pattern, flags)).search(string)

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
    """sentence-splitter's splitter for `language` (one of `SPLITTER_LANGUAGES`)."""
    return _private_sentence_splitter_module().SentenceSplitter(language=language)


#: How much of a text is read sentence by sentence: the lexical judge's best sentence and the English reading's
#: relation and name are found in a text's first `READ_CHARS` characters. Far more than a strip or a prompt
#: holds, so a 4 MB passage is read as far as any prompt would carry it, in bounded time and memory.
READ_CHARS = 100_000
#: Text longer than this is split in pieces of about this size, cut where a sentence ends (else at a space):
#: sentence-splitter's time grows with the square of what it is given, so a 4 MB passage in one call takes
#: minutes, in pieces it takes time in proportion to its length.
SPLIT_PIECE_CHARS = 5_000
_PIECE_END = re.compile(r"[.!?。！？]['\")\]]*\s+|\n\s*")


def _pieces(text: str) -> list[tuple[int, int]]:
    """(start, end) pieces of `text`, each at most about `SPLIT_PIECE_CHARS`, cut after a sentence end or a
    line break when the piece has one, else at its last space, else where the size runs out."""
    pieces, start = [], 0
    while len(text) - start > SPLIT_PIECE_CHARS:
        limit = start + SPLIT_PIECE_CHARS
        window = text[start + SPLIT_PIECE_CHARS // 2:limit]
        ends = [m.end() for m in _PIECE_END.finditer(window)]
        cut = start + SPLIT_PIECE_CHARS // 2 + ends[-1] if ends else text.rfind(" ", start + 1, limit) + 1
        cut = cut if cut > start else limit
        pieces.append((start, cut))
        start = cut
    pieces.append((start, len(text)))
    return pieces


#: The languages sentence-splitter has rules for; other languages are split at sentence punctuation.
SPLITTER_LANGUAGES = frozenset({"ca", "cs", "da", "de", "el", "en", "es", "fi", "fr", "hu", "is", "it", "lt", "lv",
                                "nl", "no", "pl", "pt", "ro", "ru", "sk", "sl", "sv", "tr"})
#: A sentence elsewhere: up to sentence punctuation (Chinese and Japanese full-width marks need no space
#: after them) and the closing quotes or brackets that follow it, or up to a line break.
_PUNCTUATED = re.compile(r"[^\n。！？!?.]*(?:[。！？]+|[!?.]+(?=\s|$))[」』”’\"')）\]]*|[^\n]+")


#: The sentence spans kept for texts seen again (the lexical judge, the reading and the refiner split the same
#: passages; calibration and benchmarks, the same passages for many questions): of up to this many characters of
#: text, none of a text longer than `READ_CHARS`. Spans and their text take at most about 17 bytes a character.
SPANS_KEPT_CHARS = 2_000_000


@text_cache(max_chars=SPANS_KEPT_CHARS, entry_chars=READ_CHARS, max_entries=8192)
def sentence_spans(language: str, text: str) -> tuple[tuple[int, int], ...]:
    """Character spans of the sentences of `text` (sentence-splitter's Moses rules where it knows the
    language, else sentence punctuation, including the Chinese and Japanese marks), in time linear in its
    length (long texts go to the splitter in pieces, `SPLIT_PIECE_CHARS`).

    Cached (`SPANS_KEPT_CHARS`): the same passages come back across queries."""
    if language not in SPLITTER_LANGUAGES:
        return tuple(_stripped(text, m.start(), m.end()) for m in _PUNCTUATED.finditer(text)
                     if m.group().strip())
    spans: list[tuple[int, int]] = []
    for start, end in _pieces(text):
        spans += [(start + a, start + b) for a, b in _piece_spans(language, text[start:end])]
    return tuple(spans)


def _stripped(text: str, start: int, end: int) -> tuple[int, int]:
    """(start, end) without the whitespace at either side."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _piece_spans(language: str, text: str) -> list[tuple[int, int]]:
    """Sentence spans of one piece, found back in the text after the splitter's normalisation."""
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
    return spans
