"""Any Hugging Face reranker / cross-encoder as a CRAG evaluator."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .hf import HFSequenceEvaluator
from .pooling import pair_inputs, pooled_logits
from .score_map import LogitScoreMap, ScoreMap

__all__ = ["CrossEncoderEvaluator", "ScoreMap"]


class CrossEncoderEvaluator(LogitScoreMap, HFSequenceEvaluator):
    """Scores (query, passage) text pairs with an `AutoModelForSequenceClassification` reranker on torch.

    `score_map` ("sigmoid", "clip", "softmax" or None for the checkpoint's) says how logits become scores
    in [-1, 1] (see `LogitScoreMap`).

    Checkpoints written by `crag train-evaluator` carry `crag_pooling` in their config ("pair" or
    "mean"; see `pooled_logits`): their head reads mean-pooled token states instead of the [CLS]
    pooler, which sentence encoders such as all-MiniLM never trained. They stay ordinary
    `*ForSequenceClassification` checkpoints and load here directly.
    """

    def __init__(self, model: str, *, score_map: ScoreMap | None = None, **kwargs: Any) -> None:
        self._set_score_map(score_map)
        super().__init__(model, **kwargs)

    def _logits(self, features: dict[str, Any]) -> Any:
        return pooled_logits(self.model, features)

    def _encode(self, query: str, texts: Sequence[str]) -> dict[str, list]:
        pair_pooling = getattr(self.model.config, "crag_pooling", None) == "pair"
        return pair_inputs(self._tokenizer, [query] * len(texts), texts, self.max_length, pair_pooling)
