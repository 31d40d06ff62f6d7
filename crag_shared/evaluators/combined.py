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
        """One pair's score from its members' scores: 2·σ(bias + Σ wᵢ·sᵢ) − 1."""
        z = self.bias + sum(w * s for w, s in zip(self.weights, member_scores))
        return 2.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z)))) - 1.0

    # -- files -----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """This object as JSON-ready values."""
        return {"format": FORMAT, "members": [m.spec for m in self.members], "weights": self.weights,
                "bias": self.bias, "thresholds": list(self._thresholds), "report": self.report}

    def save(self, path: str | Path) -> None:
        """Write the combination as JSON (readable by `load` and the spec `combined:PATH`)."""
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
            evaluators = [evaluator_from_spec(spec) for spec in specs]
            return cls(evaluators, data["weights"], data["bias"], thresholds=tuple(data["thresholds"]),
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
