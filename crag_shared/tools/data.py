"""Labelled (query, passage, relevant) pairs for calibration, training and accuracy benchmarks."""

from __future__ import annotations

import bisect
import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..text import titled


@dataclass(frozen=True)
class Pair:
    """One labelled (query, passage) pair, with its query id, split and pair type."""
    query: str
    passage: str
    relevant: bool
    query_id: str
    split: str | None = None
    kind: str | None = None  # qa_pairs' pair_type: gold_paragraph, same_article_top_overlap, ...


def _label(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value > 0
    if isinstance(value, str) and value.strip().lower() in ("1", "true", "yes", "relevant", "+1"):
        return True
    if isinstance(value, str) and value.strip().lower() in ("0", "-1", "false", "no", "irrelevant"):
        return False
    raise ValueError(f"cannot read {value!r} as a relevance label")


def passage_text(row: dict[str, Any]) -> Any:
    """A pair's or ctx's passage: `passage`, else `text` (the one reading of both formats, for every tool)."""
    return row["passage"] if "passage" in row else row.get("text")


def row_query(row: dict[str, Any]) -> Any:
    """A row's question: `query`, else `question`."""
    return row["query"] if "query" in row else row.get("question")


def record_id(row: dict[str, Any], number: int) -> str:
    """A retrieval record's id: `id`, else `idx`, else `question_id`, else its line number."""
    for key in ("id", "idx", "question_id"):
        if key in row:
            return str(row[key])
    return str(number)


def query_id(row: dict[str, Any], query: str) -> str:
    """The query a pair row belongs to: `query_id`, else `question_id`, else the question itself."""
    return str(row["query_id"] if "query_id" in row else row.get("question_id", query))


def _text(row: dict, titles: bool) -> str:
    text = passage_text(row) or ""
    return titled(text, row.get("title")) if titles else text


def json_rows(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line of a JSONL file; a line that is not a JSON object
    raises a ValueError naming the file and line."""
    with Path(path).open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except (ValueError, RecursionError) as error:
                raise ValueError(f"{path}:{number}: not JSON ({type(error).__name__}: {error})"[:300]) from None
            if not isinstance(row, dict):
                raise ValueError(f"{path}:{number}: a line must hold a JSON object, not {type(row).__name__}")
            yield number, row


def load_pairs(path: str | Path, *, top_k: int = 10, titles: bool = False, split: str | None = None) -> list[Pair]:
    """Read JSONL pairs, one object a line, in either format:

    - pairs: `query` (or `question`), `passage` (or `text`), `label` (or `relevant`: bool, ±1, 0/1),
      optional `query_id`/`question_id` and `split`;
    - PopQA retrieval records (`question` + `ctxs` list, as in CRAG's data): the first `top_k` ctxs
      become pairs labelled by their `relevant` field, the question's `idx` is its id.

    `titles=True` reads each passage as "title: text" (a ctx's or pair's `title` field), exactly as the
    Corrector scores it with `score_titles=True`, so calibration and training match that setting.
    `split` keeps only the pairs whose `split` column has that value. Fails when no pair is left.
    """
    pairs: list[Pair] = []
    for number, row in json_rows(path):
        try:
            if "ctxs" in row:
                qid = record_id(row, number)
                pairs.extend(Pair(row["question"], _text(c, titles), _label(c["relevant"]), qid, row.get("split"))
                             for c in row["ctxs"][:top_k])
                continue
            query = row_query(row)
            if not isinstance(query, str):
                raise ValueError("no query (or question) string")
            label = row["label"] if "label" in row else row["relevant"]
            qid = query_id(row, query)
            pairs.append(Pair(query, _text(row, titles), _label(label), qid, row.get("split"),
                              row.get("pair_type")))
        except (KeyError, TypeError, ValueError, RecursionError) as error:
            raise ValueError(f"{path}:{number}: not a labelled pair ({type(error).__name__}: {error})"[:300]
                             ) from None
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
