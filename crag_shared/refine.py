"""Knowledge refinement (paper section 4.4, Appendix B): decompose, filter by the evaluator, recompose."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from .text.analysis import check_language
from .text.detection import resolve
from .text.sentences import sentence_spans
from .text.words import word_count
from .types import Origin, Passage, Strip

Mode = Literal["fixed_num", "excerption", "selection"]
_TOKEN = re.compile(r"\S+")
#: Where a sentence can end (sentence-splitter breaks only after such punctuation + space, or at a newline).
_BOUNDARY = re.compile(r"[.!?…][\'\"”’)\]]*\s|[。！？][」』”’)\]）]*|\n")


@dataclass(frozen=True)
class Piece:
    """A candidate strip before scoring: a span of one source passage."""

    source_index: int
    position: int
    start: int
    end: int
    text: str


class StripRefiner:
    """Turns passages into the few knowledge strips that matter for the query.

    - `fixed_num`: windows of `window_words` words (50 in the official code); a tail shorter than half
      a window joins the window before it.
    - `excerption`: sentences (sentence-splitter, Moses rules), grouped into strips of about
      `strip_words` words; a passage of one or two sentences stays one strip, and fragments shorter
      than `min_words` join a neighbour (paper, Appendix B).
    - `selection`: each passage is one strip.
    Strips scoring at least `threshold` are kept, at most `top_k` of them (paper: 5 and -0.5), and
    recomposed in their original order. Identical strips are kept once. No strip is longer than
    `max_strip_chars`: text without sentence punctuation (a table, a log, a run-on page) is cut at word
    boundaries, so one strip never carries a whole page into the prompt.
    """

    def __init__(self, mode: Mode = "excerption", *, top_k: int = 5, threshold: float = -0.5,
                 window_words: int = 50, strip_words: int = 40, min_words: int = 5, language: str = "en",
                 max_chars: int = 100_000, max_strip_chars: int = 2_000) -> None:
        if mode not in ("fixed_num", "excerption", "selection"):
            raise ValueError(f"mode must be 'fixed_num', 'excerption' or 'selection', got {mode!r}")
        if top_k < 1:
            raise ValueError(f"top_k must be at least 1, got {top_k}")
        if not -1.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must lie in [-1, 1], got {threshold}")
        if not isinstance(max_strip_chars, int) or max_strip_chars < 100:
            raise ValueError(f"max_strip_chars must be an integer of at least 100, got {max_strip_chars!r}")
        if window_words < 1 or strip_words < 1 or min_words < 0:
            raise ValueError("window_words and strip_words must be positive, min_words non-negative")
        self.mode = mode
        self.top_k = top_k
        self.threshold = threshold
        self.window_words = window_words
        self.strip_words = strip_words
        self.min_words = min_words
        self.language = language
        self.max_chars = max_chars
        self.max_strip_chars = max_strip_chars
        check_language(language)  # fail early on an unknown language code

    def config(self) -> dict:
        """The refiner's settings as keyword arguments (to build a variant)."""
        return {"mode": self.mode, "top_k": self.top_k, "threshold": self.threshold,
                "window_words": self.window_words, "strip_words": self.strip_words,
                "min_words": self.min_words, "language": self.language, "max_chars": self.max_chars,
                "max_strip_chars": self.max_strip_chars}

    # -- decompose -------------------------------------------------------------------------------
    def decompose(self, passages: Sequence[tuple[int, str]]) -> list[Piece]:
        """Split (source_index, text) pairs into pieces; texts longer than `max_chars` are cut first."""
        pieces: list[Piece] = []
        for index, text in passages:
            text = text[: self.max_chars]
            spans = {"fixed_num": self._windows, "excerption": self._excerpts,
                     "selection": self._whole}[self.mode](text)
            for position, (start, end) in enumerate(self._bounded(text, spans)):
                pieces.append(Piece(index, position, start, end, text[start:end]))
        return pieces

    def _bounded(self, text: str, spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
        """Spans longer than `max_strip_chars` cut into pieces that end at a word boundary where there is one."""
        bounded = []
        for start, end in spans:
            while end - start > self.max_strip_chars:
                limit = start + self.max_strip_chars
                cut = text.rfind(" ", start + self.max_strip_chars // 2, limit)
                cut = limit if cut < 0 else cut
                bounded.append((start, cut))
                start = cut
                while start < end and text[start].isspace():
                    start += 1
            if end > start:
                bounded.append((start, end))
        return bounded

    @staticmethod
    def _whole(text: str) -> list[tuple[int, int]]:
        stripped = text.strip()
        if not stripped:
            return []
        start = text.index(stripped)
        return [(start, start + len(stripped))]

    def _windows(self, text: str) -> list[tuple[int, int]]:
        tokens = [(m.start(), m.end()) for m in _TOKEN.finditer(text)]
        size = self.window_words
        groups = [tokens[i:i + size] for i in range(0, len(tokens), size)]
        if len(groups) > 1 and len(groups[-1]) < size / 2:
            tail = groups.pop()
            groups[-1] = groups[-1] + tail
        return [(g[0][0], g[-1][1]) for g in groups]

    def _excerpts(self, text: str) -> list[tuple[int, int]]:
        if len(_BOUNDARY.findall(text)) <= 1:  # at most two sentences: one strip, no need to split
            return self._whole(text)
        sentences = sentence_spans(resolve(self.language, text[:2000]), text)
        if len(sentences) <= 2:
            return self._whole(text)
        groups: list[list[tuple[int, int]]] = [[]]
        words_in_group = 0
        for span in sentences:
            if words_in_group >= self.strip_words:
                groups.append([])
                words_in_group = 0
            groups[-1].append(span)
            words_in_group += word_count(text[span[0]:span[1]])
        if len(groups) > 1 and word_count(text[groups[-1][0][0]:groups[-1][-1][1]]) < self.min_words:
            groups[-2].extend(groups.pop())
        return [(g[0][0], g[-1][1]) for g in groups]

    # -- filter and recompose ----------------------------------------------------------------------
    def select(self, pieces: Sequence[Piece], scores: Sequence[float], passages: Sequence[Passage],
               origin: Origin) -> list[Strip]:
        """Keep the best pieces (≥ threshold, top_k, duplicates once) in their original order."""
        seen: set[str] = set()
        ranked: list[tuple[float, int]] = []
        for i in sorted(range(len(pieces)), key=lambda i: -scores[i]):
            key = " ".join(pieces[i].text.split()).casefold()
            if scores[i] < self.threshold or key in seen:
                continue
            seen.add(key)
            ranked.append((scores[i], i))
            if len(ranked) == self.top_k:
                break
        kept = sorted(i for _, i in ranked)
        strips = []
        for i in kept:
            piece, source = pieces[i], passages[pieces[i].source_index]
            strips.append(Strip(text=piece.text, score=scores[i], origin=origin, source_id=source.id,
                                source_index=piece.source_index, position=piece.position, start=piece.start,
                                end=piece.end, title=source.title, url=source.url))
        return strips
