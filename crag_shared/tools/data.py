"""Labelled (query, passage, relevant) pairs for calibration, training and accuracy benchmarks."""

from __future__ import annotations

import bisect
import hashlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..rows import iter_rows
from ..text import titled


@dataclass(frozen=True)
class Pair:
    """One labelled (query, passage) pair, with its query id, split, pair type and the passage's title."""
    query: str
    passage: str
    relevant: bool
    query_id: str
    split: str | None = None
    kind: str | None = None  # qa_pairs' pair_type: gold_paragraph, same_article_top_overlap, ...
    title: str | None = None


def load_pairs(path: str | Path, *, top_k: int = 10, titles: bool = False, split: str | None = None) -> list[Pair]:
    """The labelled pairs of a JSONL file, read in the one row vocabulary (`crag_shared.rows`):

    - pair rows: a question, a passage and its label (`label` or `relevant`: bool, ±1, 0/1), optional
      `query_id`/`question_id`, `split` and `pair_type`;
    - records (PopQA/CRAG's `question` + `ctxs`): the first `top_k` passages become pairs labelled by
      their own `label` or `relevant` field, the record's key (`id`, `idx`, ...) their query id.

    `titles=True` reads each passage as "title: text" (a passage's `title` field), exactly as the
    Corrector scores it with `score_titles=True`, so training matches that setting.
    `split` keeps only the pairs whose `split` column has that value. Fails when no pair is left, or when
    a passage has no label (naming the file, the line and the field).
    """
    pairs: list[Pair] = []
    for record in iter_rows(path, "labelled pairs"):
        kind = record.fields.get("pair_type")
        for i, (passage, label) in enumerate(list(zip(record.passages, record.labels))[:top_k]):
            if label is None:
                which = "the passage" if record.pair else f"passage {i} of the record"
                raise ValueError(f"{record.where}: {which} has no relevance label (`label` or `relevant`)")
            text = passage.text or ""
            pairs.append(Pair(record.question, titled(text, passage.title) if titles else text, label, record.key,
                              record.split, kind if isinstance(kind, str) else None, passage.title))
    if split is not None:
        pairs = [p for p in pairs if p.split == split]
    if not pairs:
        raise ValueError(f"{path}: no pairs" + (f" with split {split!r}" if split is not None else ""))
    return pairs


def by_query(pairs: Iterable[Pair]) -> dict[str, list[Pair]]:
    """The pairs grouped by query id, in first-seen order."""
    grouped: dict[str, list[Pair]] = defaultdict(list)
    for pair in pairs:
        grouped[pair.query_id].append(pair)
    return dict(grouped)


def split_by_query(pairs: Sequence[Pair], validation: float = 0.15,
                   salt: str = "crag") -> tuple[list[Pair], list[Pair]]:
    """A deterministic train/validation split by query (no query's passages on both sides).

    Pairs with a `split` column use it ("eval"/"validation"/"dev"/"test" go to validation) when it names any
    held-out pairs; pairs that all sit in one training split are split by query as if it were absent."""
    held = {"eval", "validation", "dev", "test"}
    if any(p.split in held for p in pairs):
        return [p for p in pairs if p.split not in held], [p for p in pairs if p.split in held]

    def held_out(pair: Pair) -> bool:
        digest = hashlib.md5(f"{salt}:{pair.query_id}".encode()).hexdigest()
        return int(digest[:8], 16) / 0xFFFFFFFF < validation

    return [p for p in pairs if not held_out(p)], [p for p in pairs if held_out(p)]


def kfold_by_query(pairs: Sequence[Pair], k: int, salt: str = "crag") -> list[tuple[list[Pair], list[Pair]]]:
    """k (train, test) splits by query id."""
    def fold(pair: Pair) -> int:
        return int(hashlib.md5(f"{salt}:{pair.query_id}".encode()).hexdigest()[:8], 16) % k

    return [([p for p in pairs if fold(p) != i], [p for p in pairs if fold(p) == i]) for i in range(k)]


def auroc(scores: Sequence[float], labels: Sequence[bool]) -> float:
    """Area under the ROC curve (ties count half); nan when one class is missing."""
    positives = [s for s, y in zip(scores, labels) if y]
    negatives = sorted(s for s, y in zip(scores, labels) if not y)
    if not positives or not negatives:
        return float("nan")
    total = 0.0
    for score in positives:
        below = bisect.bisect_left(negatives, score)
        ties = bisect.bisect_right(negatives, score) - below
        total += below + ties / 2
    return total / (len(positives) * len(negatives))
