"""The paper's Eq. 2 and the grid search that fits the two action thresholds to it."""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..policy import ActionPolicy
from ..types import Action


@dataclass(frozen=True)
class Calibration:
    """The thresholds that maximise Eq. 2, the objective there, and the grid it was searched on."""

    policy: ActionPolicy
    objective: float
    alpha: float
    grid: list[float]
    surface: list[list[float]]  # surface[i][j]: objective at upper=grid[i], lower=grid[j] (nan if lower > upper)
    actions: dict[str, int]
    accuracy: float


def equation_2(best_scores: Sequence[float], positives: Sequence[bool], upper: float, lower: float,
               alpha: float = 1.0) -> tuple[float, dict[str, int], float]:
    """The paper's Eq. 2, S = (TP + TN) / n_total − α · FP / n_neg, for one threshold pair.

    A query is positive when any of its passages is relevant; its action depends only on its best score.
    - TP: Correct on a positive query; TN: Incorrect on a negative query;
    - Ambiguous hands the generator both internal and web knowledge, so it counts half towards TP or TN
      (without this, Ambiguous could never beat Incorrect and Eq. 2 would always pick upper == lower);
    - FP: Correct on a negative query, the costly error (bad retrieval trusted, the web never asked);
    - n_neg: the number of negative queries, i.e. those that should be judged Incorrect.
    Returns (S, action counts, accuracy) where accuracy counts only TP and TN.
    """
    return _Counter(best_scores, positives).objective(upper, lower, alpha)


class _Counter:
    """Counts actions per label for any threshold pair in O(log n), from sorted best scores."""

    def __init__(self, best_scores: Sequence[float], positives: Sequence[bool]) -> None:
        _no_nan([[s] for s in best_scores])
        self.pos = sorted(s for s, p in zip(best_scores, positives) if p)
        self.neg = sorted(s for s, p in zip(best_scores, positives) if not p)

    def upper_term(self, upper: float, alpha: float) -> float:
        """The part of Eq. 2 that depends on the upper threshold (Correct answers)."""
        tp = len(self.pos) - bisect.bisect_left(self.pos, upper)
        fp = len(self.neg) - bisect.bisect_left(self.neg, upper)
        return 0.5 * (tp - fp) / self.total - alpha * (fp / len(self.neg) if self.neg else 0.0)

    def lower_term(self, lower: float) -> float:
        """The part of Eq. 2 that depends on the lower threshold (Incorrect answers)."""
        return 0.5 * (bisect.bisect_left(self.neg, lower) - bisect.bisect_left(self.pos, lower)) / self.total

    @property
    def total(self) -> int:
        return len(self.pos) + len(self.neg)

    def objective(self, upper: float, lower: float, alpha: float) -> tuple[float, dict[str, int], float]:
        ActionPolicy(upper, lower)  # validates the pair
        n_pos, n_neg = len(self.pos), len(self.neg)
        tp = n_pos - bisect.bisect_left(self.pos, upper)  # positives with best ≥ upper
        fp = n_neg - bisect.bisect_left(self.neg, upper)
        tn = bisect.bisect_left(self.neg, lower)  # negatives with best < lower
        fn = bisect.bisect_left(self.pos, lower)
        total = n_pos + n_neg
        ambiguous = total - tp - fp - tn - fn
        objective = (tp + tn + 0.5 * ambiguous) / total - alpha * (fp / n_neg if n_neg else 0.0)
        counts = {Action.CORRECT.value: tp + fp, Action.INCORRECT.value: tn + fn, Action.AMBIGUOUS.value: ambiguous}
        return objective, counts, (tp + tn) / total


MAX_STEPS = 2001


def _no_nan(query_scores: Sequence[Sequence[float]]) -> None:
    """Refuse NaN scores, naming how many and the first query holding one: NaN compares false with every
    threshold, so it would be counted in no action at all, and a best score taken over it depends on the
    passages' order. An evaluator that gives NaN failed; its scores fit no thresholds."""
    nans = [i for i, scores in enumerate(query_scores) for s in scores if math.isnan(s)]
    if nans:
        total = sum(len(scores) for scores in query_scores)
        raise ValueError(f"{len(nans)} of {total} scores are NaN (the first in query {nans[0]}): the evaluator "
                         "failed on them; score again with a working evaluator instead of fitting thresholds "
                         "to them")


def fit_thresholds(query_scores: Sequence[Sequence[float]], query_labels: Sequence[Sequence[bool]], *,
              alpha: float = 1.0, steps: int = 201) -> Calibration:
    """Fit (upper, lower) by grid search over [-1, 1] maximising `equation_2` (paper, Appendix B).

    Eq. 2 splits into a term of the upper threshold and a term of the lower one, so the best pair is
    found in O(steps · log n) with a running maximum over lower ≤ upper; only the surface kept for the
    plot is steps², hence the cap of `MAX_STEPS` grid points.
    """
    if len(query_scores) != len(query_labels) or not query_scores:
        raise ValueError("need the same, non-zero number of score lists and label lists")
    uneven = next((i for i, (s, y) in enumerate(zip(query_scores, query_labels)) if len(s) != len(y)), None)
    if uneven is not None:
        raise ValueError(f"query {uneven} has {len(query_scores[uneven])} scores for {len(query_labels[uneven])} "
                         "labels: need one score per labelled passage")
    _no_nan(query_scores)
    if isinstance(steps, bool) or not isinstance(steps, int) or not 2 <= steps <= MAX_STEPS:
        raise ValueError(f"steps must be an integer from 2 to {MAX_STEPS}, got {steps!r}")
    if not isinstance(alpha, (int, float)) or not math.isfinite(alpha) or alpha < 0:
        raise ValueError(f"alpha must be a finite number >= 0, got {alpha!r}")
    counter = _Counter([max(s, default=-1.0) for s in query_scores], [any(labels) for labels in query_labels])
    grid = [round(-1 + 2 * i / (steps - 1), 6) for i in range(steps)]
    upper_term = [counter.upper_term(u, alpha) for u in grid]
    lower_term = [counter.lower_term(lo) for lo in grid]
    surface = [[0.5 + f + g for g in lower_term[: i + 1]] + [math.nan] * (steps - i - 1)
               for i, f in enumerate(upper_term)]
    top: tuple[float, int, int] | None = None
    best_lower = 0
    for i in range(steps):
        if lower_term[i] > lower_term[best_lower] + 1e-12:
            best_lower = i
        value = surface[i][best_lower]
        if top is None or value > top[0] + 1e-12:
            top = (value, i, best_lower)
    assert top is not None
    upper, lower = grid[top[1]], grid[top[2]]
    objective, counts, accuracy = counter.objective(upper, lower, alpha)
    return Calibration(ActionPolicy(upper, lower), objective, alpha, grid, surface, counts, accuracy)
