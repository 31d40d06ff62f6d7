"""The reader's thresholds and the default judge's blend, fitted on the tune halves of the development judge
sets and PopQA, answers first.

Upper: the highest upper threshold at which the sets keep, on average, at least `KEEP` of the answers that
an unjudged pipeline keeps (`unjudged`: a judge that refuses answers is what users leave). Lower (it decides when
retrieval is discarded for the web): the highest value at or below the upper threshold under which at most
`ANSWER_LOSS` of the answerable questions' best answer-passage scores fall. The default judge blends the
reader with the lexical judge (`combined:reader-lexical`, `fit_blend`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from crag_shared.corrector import Corrector
from crag_shared.evaluators import CombinedEvaluator, LexicalEvaluator, RetrievalEvaluator
from crag_shared.policy import ActionPolicy
from crag_shared.refine import StripRefiner

from ..judges import SETS, Remembered, judge_sets, line
from ..near_miss import Row, figures, popqa_sets
from ..recall import has_answer_word

KEEP = 0.9
ANSWER_LOSS = 0.05
UPPERS = [round(-0.9 + 0.05 * i, 2) for i in range(37)]
#: The reader's share of the default judge's blend (the lexical judge has the rest).
BLENDS = (0.3, 0.4, 0.5, 0.6, 0.7)
#: The blend's logistic scale: blended scores are spread over (-1, 1) around the fitted offset.
BLEND_SCALE = 4.0
OFFSETS = [round(-0.9 + 0.05 * i, 2) for i in range(31)]


def tune_sets(bench: Path | None, names: Sequence[str] = ("docs", "facts", "domains")
              ) -> dict[str, dict[str, list[Row]]]:
    """The development sets (and PopQA's when `bench` is given), whole: `figures` picks the half."""
    sets = judge_sets(SETS, names)
    if bench is not None:
        sets["popqa"] = popqa_sets(bench)
    return sets


def unjudged(sets: dict[str, dict[str, list[Row]]], evaluator: RetrievalEvaluator, half: str = "tune"
             ) -> dict[str, int]:
    """Per set, the answers a pipeline keeps when nothing is judged (every passage and strip passes): what
    retrieval and the refiner's top strips reach at best, the measure of answers kept."""
    found = figures(Corrector(evaluator, ActionPolicy(-1.0, -1.0), refiner=StripRefiner(threshold=-1.0)), sets, half)
    return {name: max(1, v[1]) for name, v in found.items()}


def _kept(found: dict[str, tuple[int, ...]], ceiling: dict[str, int]) -> float:
    return sum(min(1.0, v[1] / ceiling[name]) for name, v in found.items()) / len(found)


def _passed(found: dict[str, tuple[int, ...]]) -> float:
    return sum(v[3] / max(1, v[2]) for v in found.values()) / len(found)


def _remembered(evaluator: RetrievalEvaluator) -> Remembered:
    return evaluator if isinstance(evaluator, Remembered) else Remembered(evaluator)


def _answer_floor(evaluator: RetrievalEvaluator, sets: dict[str, dict[str, list[Row]]], half: str) -> float:
    """The score under which `ANSWER_LOSS` of the answerable questions' best answer-passage scores fall."""
    best = sorted(max(evaluator.evaluate(row["question"], gold).scores)
                  for parts in sets.values() for row in parts["in corpus"] if row["half"] == half
                  for gold in [answer_passages(row)] if gold)
    return best[int(ANSWER_LOSS * len(best))] if best else -0.5


def fit_thresholds(evaluator: RetrievalEvaluator, sets: dict[str, dict[str, list[Row]]], out: TextIO | None = None,
                   half: str = "tune") -> tuple[float, float, dict[str, tuple[int, ...]]]:
    """(upper, lower, the figures at upper per set) for `evaluator` on `half` of `sets`."""
    remembered = _remembered(evaluator)
    scan: dict[float, dict[str, tuple[int, ...]]] = {}
    ceiling = unjudged(sets, remembered, half)
    upper = UPPERS[0]
    for candidate in UPPERS:
        found = figures(Corrector(evaluator=remembered, policy=ActionPolicy(candidate, -1.0)), sets, half)
        scan[candidate] = found
        if out is not None:
            out.write(f"upper {candidate:+.2f}: answers kept {_kept(found, ceiling):.2f}, "
                      f"near misses passed {_passed(found):.2f}\n")
        if _kept(found, ceiling) < KEEP:
            break
        upper = candidate
    lower = min(upper, _answer_floor(remembered, sets, half))
    if out is not None:
        out.write(f"fitted: upper {upper:+.2f}, lower {lower:+.2f}\n" + "".join(
            line(n, half, v) + "\n" for n, v in scan[upper].items()))
    return upper, lower, scan[upper]


def blend(reader: RetrievalEvaluator, share: float, offset: float = 0.0, lexical: RetrievalEvaluator | None = None,
          thresholds: tuple[float, float] = (0.0, -0.5)) -> CombinedEvaluator:
    """2·σ(BLEND_SCALE·(share·reader + (1 − share)·lexical − offset)) − 1."""
    return CombinedEvaluator([reader, lexical or LexicalEvaluator()],
                             [BLEND_SCALE * share, BLEND_SCALE * (1.0 - share)], -BLEND_SCALE * offset,
                             thresholds=thresholds)


def fit_blend(reader: RetrievalEvaluator, sets: dict[str, dict[str, list[Row]]], out: TextIO | None = None
              ) -> CombinedEvaluator:
    """The default judge: a blend of the reader and the lexical judge whose upper threshold is 0 and whose
    offset is fitted, so that both of its gates (the upper threshold on passages and the refiner's strip
    threshold, -0.5, on strips) move together, as users run them. Per share of `BLENDS`, the highest offset
    keeping `KEEP` of the answers; of those, the blend passing the fewest near misses."""
    remembered, lexical = _remembered(reader), Remembered(LexicalEvaluator())
    best: tuple[float, float, float, dict[str, tuple[int, ...]]] | None = None
    for share in BLENDS:
        ceiling, chosen = unjudged(sets, blend(remembered, share, 0.0, lexical)), None
        for offset in OFFSETS:
            found = figures(Corrector(blend(remembered, share, offset, lexical), ActionPolicy(0.0, -1.0)),
                            sets, "tune")
            if _kept(found, ceiling) < KEEP:
                break
            chosen = (offset, found)
        if chosen is None:
            continue
        offset, found = chosen
        if out is not None:
            out.write(f"reader share {share:.1f}: offset {offset:+.2f}, answers kept {_kept(found, ceiling):.2f}, "
                      f"near misses passed {_passed(found):.2f}\n")
        if best is None or _passed(found) < best[0]:
            best = (_passed(found), share, offset, found)
    if best is None:
        raise ValueError(f"no blend keeps {KEEP:.0%} of the answers")
    _, share, offset, found = best
    lower = min(0.0, _answer_floor(blend(remembered, share, offset, lexical), sets, "tune"))
    if out is not None:
        out.write(f"fitted: reader share {share:.1f}, offset {offset:+.2f}, lower {lower:+.2f}\n" + "".join(
            line(n, "tune", v) + "\n" for n, v in found.items()))
    combined = blend(remembered.evaluator, share, offset, thresholds=(0.0, round(lower, 4)))
    combined.report = {"reader_share": share, "offset": offset, "keep": KEEP,
                       "fitted_on": "tune halves: " + ", ".join(sets),
                       "figures": {name: list(v) for name, v in found.items()}}
    return combined


def answer_passages(row: Row) -> list[str]:
    """The passages of a row that hold its answer: a judge set's gold passages, else those naming a gold answer."""
    return list(row.get("gold") or [p.text for p in row["passages"] if has_answer_word(p.text or "", row["answers"])])
