"""CombinedEvaluator: a small fitted model over the scores of several evaluators.

Word overlap, a bi-encoder's cosine and a cross-encoder fail on different passages; a logistic
combination fit on labelled pairs (`crag fit-combination`) weighs them, and ships as a JSON file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .base import Evaluation, RetrievalEvaluator
from .embedding import SPEC_SUFFIX, embedding_kind

#: 2: `embedding:` / `onnx-embedding:` members mean the unit "matched"; in format 1 files they meant the
#: unit "sentence", which `load` keeps for them (as `embedding-sentence:`), so old fits reproduce.
FORMAT = 2


class CombinedEvaluator(RetrievalEvaluator):
    """score = 2·σ(bias + Σ wᵢ·sᵢ) − 1 over the member evaluators' scores sᵢ, in [-1, 1].

    Members are evaluator specs (each must be rebuildable from its spec); `weights`, `bias` and the
    thresholds come from `fit` and travel in the JSON file that `save` writes and `load` reads (spec
    `combined:PATH`). A pair's score depends only on its members' scores, so it stays batch-independent.
    """

    spec_prefix = "combined"

    def __init__(self, members: Sequence[RetrievalEvaluator], weights: Sequence[float], bias: float, *,
                 thresholds: tuple[float, float] = (0.5, -0.5), path: str | None = None,
                 report: dict[str, Any] | None = None) -> None:
        if not members or len(members) != len(weights):
            raise ValueError("a combination needs one weight per member, and at least one member")
        self.members = list(members)
        self.weights = [float(w) for w in weights]
        self.bias = float(bias)
        self._thresholds = (float(thresholds[0]), float(thresholds[1]))
        self.path = path
        self.report = dict(report or {})

    @property
    def spec(self) -> str:
        if self.path is None:
            raise NotImplementedError("save() the combination first: its spec is combined:PATH")
        return f"combined:{self.path}"

    def warm_up(self) -> None:
        for member in self.members:
            member.warm_up()

    def clear_cache(self) -> None:
        for member in self.members:
            member.clear_cache()

    def evaluate(self, query: str, texts: Sequence[str]) -> Evaluation:
        columns = [member.evaluate(query, texts) for member in self.members]
        notes = [note for column in columns for note in column.notes]
        return Evaluation([self.combine([c.scores[i] for c in columns]) for i in range(len(texts))], notes)

    def combine(self, member_scores: Sequence[float]) -> float:
        z = self.bias + sum(w * s for w, s in zip(self.weights, member_scores))
        return 2.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z)))) - 1.0

    # -- fitting and files -----------------------------------------------------------------------------
    @classmethod
    def fit(cls, members: Sequence[RetrievalEvaluator], pairs: Sequence[Any], *, l2: float = 1e-3,
            upper_probability: float = 0.5, lower_probability: float = 0.1,
            progress: bool = True) -> CombinedEvaluator:
        """Fit the weights by L2-regularised logistic regression (Newton steps) on labelled pairs.

        The score is then a probability of relevance, so the thresholds are probabilities too: Correct
        when some passage is more likely relevant than not (`upper_probability`), Incorrect when every
        passage is below `lower_probability`. Thresholds fitted by Eq. 2 on the same pairs are only
        reported (`report["eq2_thresholds"]`): they follow the fitting set's mix of queries, not the
        pairs, and did not transfer (qa_pairs train gave upper 0.74, which sent 79 % of PopQA's queries
        to Ambiguous; README)."""
        if not 0 < lower_probability <= upper_probability < 1:
            raise ValueError("need 0 < lower_probability <= upper_probability < 1")
        from ..calibrate import score_by_query
        from ..data import auroc
        from ..policy import fit_thresholds

        columns = [score_by_query(member, pairs, progress=progress) for member in members]
        labels = columns[0][1]
        rows = [[column[0][q][i] for column in columns] for q in range(len(labels)) for i in range(len(labels[q]))]
        targets = [1.0 if y else 0.0 for ys in labels for y in ys]
        weights = logistic_regression(rows, targets, l2=l2)
        combined = cls(members, weights[1:], weights[0])
        query_scores, flat = [], []
        for q, ys in enumerate(labels):
            row_scores = [combined.combine([column[0][q][i] for column in columns]) for i in range(len(ys))]
            query_scores.append(row_scores)
            flat += row_scores
        policy = fit_thresholds(query_scores, labels).policy
        combined._thresholds = (2 * upper_probability - 1, 2 * lower_probability - 1)
        combined.report = {"pairs": len(targets), "queries": len(labels),
                           "eq2_thresholds": [policy.upper, policy.lower],
                           "fit_pair_auroc": auroc(flat, [y for ys in labels for y in ys]),
                           "member_pair_auroc": {m.spec: auroc([r[j] for r in rows], [t > 0 for t in targets])
                                                 for j, m in enumerate(members)}}
        return combined

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "members": [m.spec for m in self.members], "weights": self.weights,
                "bias": self.bias, "thresholds": list(self._thresholds), "report": self.report}

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n")
        self.path = str(path)

    @classmethod
    def load(cls, path: str | Path, members: Sequence[str] | None = None) -> CombinedEvaluator:
        """The combination in `path`. `members` replaces its member specs, in order, with the same models
        where you keep them (a shipped file names the encoder by hub id: pass your local copy, or its ONNX
        export, e.g. `["lexical", "onnx-embedding:./all-MiniLM-L6-v2"]`)."""
        from . import evaluator_from_spec

        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            if data.get("format") not in (1, FORMAT):
                raise ValueError(f"format {data.get('format')!r}, expected {FORMAT}")
            saved = [_sentence_unit(spec) if data["format"] == 1 else spec for spec in data["members"]]
            specs = saved if members is None else list(members)
            if len(specs) != len(data["members"]):
                raise ValueError(f"{len(specs)} member specs given for {len(data['members'])} members")
            members = [evaluator_from_spec(spec) for spec in specs]
            return cls(members, data["weights"], data["bias"], thresholds=tuple(data["thresholds"]),
                       path=str(path), report=data.get("report"))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            raise ValueError(f"{path}: not a crag combination file ({type(error).__name__}: {error})") from None


def _sentence_unit(spec: str) -> str:
    """A format 1 member spec as it reads today: `embedding:X` -> `embedding-sentence:X` (same for ONNX)."""
    kind, _, target = spec.partition(":")
    embedding = embedding_kind(kind.strip().lower())
    if embedding and embedding[1] == "matched" and target:
        return f"{embedding[0]}{SPEC_SUFFIX['sentence']}:{target}"
    return spec


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
