"""The reader's thresholds, fitted on the tune halves of the development judge sets and PopQA.

Upper: the lowest upper threshold (most answers kept) whose near misses passed on stay within
`NEAR_MISS_BUDGET` of the near-miss questions and whose off-topic questions passed on stay within
`OFF_TOPIC_BUDGET`, pooled over the sets. Lower (it decides when retrieval is discarded for the web): the
highest value at or below the upper threshold under which at most `ANSWER_LOSS` of the answerable questions'
best answer-passage scores fall.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from crag_shared.corrector import Corrector
from crag_shared.evaluators import RetrievalEvaluator
from crag_shared.policy import ActionPolicy

from ..judges import SETS, Remembered, judge_sets, line
from ..near_miss import Row, figures, popqa_sets
from ..recall import has_answer_word

NEAR_MISS_BUDGET = 0.25
OFF_TOPIC_BUDGET = 0.05
ANSWER_LOSS = 0.05
UPPERS = [round(-0.8 + 0.05 * i, 2) for i in range(35)]


def tune_sets(bench: Path | None, names: Sequence[str] = ("docs", "facts", "domains")
              ) -> dict[str, dict[str, list[Row]]]:
    """The development sets (and PopQA's when `bench` is given), whole: `figures` picks the half."""
    sets = judge_sets(SETS, names)
    if bench is not None:
        sets["popqa"] = popqa_sets(bench)
    return sets


def fit_thresholds(evaluator: RetrievalEvaluator, sets: dict[str, dict[str, list[Row]]], out: TextIO | None = None,
                   half: str = "tune") -> tuple[float, float, dict[str, Any]]:
    """(upper, lower, the scan) for `evaluator` on `half` of `sets`."""
    remembered = Remembered(evaluator)
    scan: dict[float, dict[str, tuple[int, ...]]] = {}
    chosen = None
    for upper in UPPERS:
        found = figures(Corrector(evaluator=remembered, policy=ActionPolicy(upper, -1.0)), sets, half)
        scan[upper] = found
        near = sum(v[3] for v in found.values()) / max(1, sum(v[2] for v in found.values()))
        off = sum(v[5] for v in found.values() if len(v) > 4) / max(1, sum(v[4] for v in found.values() if len(v) > 4))
        kept = sum(v[1] for v in found.values())
        if out is not None:
            out.write(f"upper {upper:+.2f}: kept {kept}, near misses passed {near:.2f}, off topic passed {off:.2f}\n")
        if chosen is None and near <= NEAR_MISS_BUDGET and off <= OFF_TOPIC_BUDGET:
            chosen = upper
    upper = chosen if chosen is not None else UPPERS[-1]
    best = sorted(max(remembered.evaluate(row["question"], gold).scores)
                  for parts in sets.values() for row in parts["in corpus"] if row["half"] == half
                  for gold in [answer_passages(row)] if gold)
    lower = min(upper, best[int(ANSWER_LOSS * len(best))] if best else -0.5)
    if out is not None:
        out.write(f"fitted: upper {upper:+.2f}, lower {lower:+.2f}\n" + "".join(
            line(n, half, v) + "\n" for n, v in scan[upper].items()))
    return upper, lower, {"scan": {str(k): v for k, v in scan.items()}}


def answer_passages(row: Row) -> list[str]:
    """The passages of a row that hold its answer: a judge set's gold passages, else those naming a gold answer."""
    return list(row.get("gold") or [p.text for p in row["passages"] if has_answer_word(p.text or "", row["answers"])])
