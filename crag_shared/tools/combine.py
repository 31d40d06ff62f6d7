"""`crag fit-combination`: fit a `CombinedEvaluator`'s weights on labelled pairs (logistic regression)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..calibration import fit_thresholds
from ..evaluators.base import RetrievalEvaluator
from ..evaluators.combined import CombinedEvaluator
from ..evaluators.spec import evaluator_spec
from .calibrate import score_by_query
from .data import auroc


def fit_combination(members: Sequence[RetrievalEvaluator], pairs: Sequence[Any], *, l2: float = 1e-3,
                    upper_probability: float = 0.5, lower_probability: float = 0.1,
                    progress: bool = True) -> CombinedEvaluator:
    """Fit the weights by L2-regularised logistic regression (Newton steps) on labelled pairs.

    The score is then a probability of relevance, so the thresholds are probabilities too: Correct
    when some passage is more likely relevant than not (`upper_probability`), Incorrect when every
    passage is below `lower_probability`. Thresholds fitted by Eq. 2 on the same pairs are only
    reported (`report["eq2_thresholds"]`): they follow the fitting set's mix of queries, not the
    pairs, and did not transfer to other sets (docs: Benchmarks)."""
    if not 0 < lower_probability <= upper_probability < 1:
        raise ValueError("need 0 < lower_probability <= upper_probability < 1")
    columns = [score_by_query(member, pairs, progress=progress) for member in members]
    labels = columns[0][1]
    rows = [[column[0][q][i] for column in columns] for q in range(len(labels)) for i in range(len(labels[q]))]
    targets = [1.0 if y else 0.0 for ys in labels for y in ys]
    weights = logistic_regression(rows, targets, l2=l2)
    thresholds = (2 * upper_probability - 1, 2 * lower_probability - 1)
    combined = CombinedEvaluator(members, weights[1:], weights[0], thresholds=thresholds)
    query_scores, flat = [], []
    for q, ys in enumerate(labels):
        row_scores = [combined.combine([column[0][q][i] for column in columns]) for i in range(len(ys))]
        query_scores.append(row_scores)
        flat += row_scores
    policy = fit_thresholds(query_scores, labels).policy
    combined.report = {"pairs": len(targets), "queries": len(labels),
                       "eq2_thresholds": [policy.upper, policy.lower],
                       "fit_pair_auroc": auroc(flat, [y for ys in labels for y in ys]),
                       "member_pair_auroc": {evaluator_spec(m): auroc([r[j] for r in rows], [t > 0 for t in targets])
                                             for j, m in enumerate(members)}}
    return combined


def logistic_regression(rows: Sequence[Sequence[float]], targets: Sequence[float], *, l2: float = 1e-3,
                        iterations: int = 50) -> list[float]:
    """[bias, w₁, …] maximising the L2-penalised log likelihood, by Newton's method (features are few)."""
    d = len(rows[0]) + 1
    w = [0.0] * d
    for _ in range(iterations):
        gradient = [0.0] * d
        hessian = [[0.0] * d for _ in range(d)]
        for row, y in zip(rows, targets):
            x = [1.0, *row]
            z = sum(a * b for a, b in zip(w, x))
            p = 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))
            for i in range(d):
                gradient[i] += (p - y) * x[i]
                for j in range(i, d):
                    hessian[i][j] += p * (1 - p) * x[i] * x[j]
        for i in range(d):
            for j in range(i):
                hessian[i][j] = hessian[j][i]
            if i:  # the bias is not penalised
                gradient[i] += l2 * w[i]
                hessian[i][i] += l2
            hessian[i][i] += 1e-9
        step = _solve(hessian, gradient)
        w = [a - b for a, b in zip(w, step)]
        if max(abs(s) for s in step) < 1e-8:
            break
    return w


def _solve(matrix: list[list[float]], vector: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting (d is tiny)."""
    n = len(vector)
    a = [[*row, vector[i]] for i, row in enumerate(matrix)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        a[col], a[pivot] = a[pivot], a[col]
        for r in range(col + 1, n):
            factor = a[r][col] / a[col][col]
            for c in range(col, n + 1):
                a[r][c] -= factor * a[col][c]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (a[r][n] - sum(a[r][c] * x[c] for c in range(r + 1, n))) / a[r][r]
    return x
