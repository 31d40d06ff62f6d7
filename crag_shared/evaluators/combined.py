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

__all__ = ["CombinedEvaluator"]


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
        self.reads_titles = any(m.reads_titles for m in self.members)
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
        """Each text's combined score from its members' scores, its members' reasons, and the one rule of a blend:
        no member makes a text Correct alone. A text that a member scores at its floor (the lexical judge finds
        none of the question's words in it, or reads it as a question or an instruction to the judge) scores at
        most between the thresholds, whatever the others say. The members' notes are kept."""
        columns = [member.evaluate(query, texts) for member in self.members]
        notes = [note for column in columns for note in column.notes]
        upper, lower = self.thresholds
        ceiling = (upper + lower) / 2.0
        scores, reasons = [], []
        for i in range(len(texts)):
            score = self.combine([c.scores[i] for c in columns])
            said = [c.reasons[i] for c in columns if c.reasons and c.reasons[i]]
            floored = [describe_member(m) for m, c in zip(self.members, columns) if c.scores[i] <= m.floor]
            if floored and len(floored) < len(self.members) and score > ceiling:
                score = ceiling
                said.append(f"the {' and '.join(floored)} judge ruled it out, and no judge alone makes a passage "
                            f"Correct: {ceiling:+.2f} at most")
            scores.append(score)
            reasons.append("; ".join(said))
        return Evaluation(scores, notes, reasons if any(reasons) else [])

    def combine(self, member_scores: Sequence[float]) -> float:
        """One pair's score from its members' scores: 2·σ(bias + Σ wᵢ·sᵢ) − 1 (NaN where a member's is)."""
        z = clip(self.bias + sum(w * s for w, s in zip(self.weights, member_scores)), -60.0, 60.0)
        return 2.0 / (1.0 + math.exp(-z)) - 1.0


def describe_member(member: RetrievalEvaluator) -> str:
    """A member as the reasons name it: its class without "Evaluator" ("Lexical", "Reader")."""
    return type(member).__name__.removesuffix("Evaluator").lower()
