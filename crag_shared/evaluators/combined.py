"""CombinedEvaluator: a small fitted model over the scores of several evaluators.

Word overlap, a bi-encoder's cosine and a cross-encoder fail on different passages; a logistic
combination fit on labelled pairs (`crag fit-combination`) weighs them, and ships as a JSON file.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..scores import clip
from .base import Evaluation, RetrievalEvaluator


class CombinedEvaluator(RetrievalEvaluator):
    """score = 2·σ(bias + Σ wᵢ·sᵢ) − 1 over the member evaluators' scores sᵢ, in [-1, 1].

    Members are evaluators that a spec rebuilds; `weights`, `bias` and the thresholds come from
    `crag fit-combination` and travel in the JSON file that `save_combination` writes and `load_combination`
    reads (`crag_shared.evaluators.spec`; spec `combined:PATH`). A pair's score depends only on its
    members' scores, so it stays batch-independent.
    """


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
    def floor(self) -> float:
        """The combined score of every member at its own floor (or ceiling, where its weight is negative)."""
        return self.combine([m.floor if w >= 0 else 1.0 for m, w in zip(self.members, self.weights)])

    def warm_up(self) -> None:
        """Load every member's model."""
        for member in self.members:
            member.warm_up()

    def clear_cache(self) -> None:
        """Empty every member's cache (benchmarks measure unseen texts)."""
        for member in self.members:
            member.clear_cache()

    def evaluate(self, query: str, texts: Sequence[str]) -> Evaluation:
        """Each text's combined score from its members' scores; the members' notes are kept."""
        columns = [member.evaluate(query, texts) for member in self.members]
        notes = [note for column in columns for note in column.notes]
        return Evaluation([self.combine([c.scores[i] for c in columns]) for i in range(len(texts))], notes)

    def combine(self, member_scores: Sequence[float]) -> float:
        """One pair's score from its members' scores: 2·σ(bias + Σ wᵢ·sᵢ) − 1 (NaN where a member's is)."""
        z = clip(self.bias + sum(w * s for w, s in zip(self.weights, member_scores)), -60.0, 60.0)
        return 2.0 / (1.0 + math.exp(-z)) - 1.0
