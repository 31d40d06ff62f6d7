"""Any Hugging Face reranker / cross-encoder as a CRAG evaluator."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from .hf import HFSequenceEvaluator
from .pooling import pair_inputs, pooled_logits

ScoreMap = Literal["sigmoid", "clip", "softmax"]


class CrossEncoderEvaluator(HFSequenceEvaluator):
    """Scores (query, passage) text pairs with an `AutoModelForSequenceClassification` reranker.

    Logits z become scores in [-1, 1] by `score_map`:
    - "sigmoid": 2·σ(z) − 1 = tanh(z/2), for rerankers trained with a relevance probability (MS MARCO
      MiniLM cross-encoders, bge-reranker); a score of 0 means p(relevant) = 0.5;
    - "clip": z clipped to [-1, 1], for regression heads trained on ±1 labels (what `crag
      train-evaluator` writes);
    - "softmax": 2·p(label 1) − 1, for two-label classifiers.
    Left as None, the map stored in the checkpoint's config (`crag_score_map`) is used, else "softmax"
    for two labels and "sigmoid" otherwise.

    Checkpoints written by `crag train-evaluator` carry `crag_pooling` in their config ("pair" or
    "mean"; see `pooled_logits`): their head reads mean-pooled token states instead of the [CLS]
    pooler, which sentence encoders such as all-MiniLM never trained. They stay ordinary
    `*ForSequenceClassification` checkpoints and load here directly.
    """

    default_thresholds = (0.5, -0.9)

    def __init__(self, model: str, *, score_map: ScoreMap | None = None, **kwargs: Any) -> None:
        if score_map not in (None, "sigmoid", "clip", "softmax"):
            raise ValueError(f"score_map must be 'sigmoid', 'clip' or 'softmax', got {score_map!r}")
        super().__init__(model, **kwargs)
        self._score_map = score_map

    @property
    def score_map(self) -> ScoreMap:
        """The logit-to-score map in effect: the one given, else the checkpoint's, else by label count."""
        if self._score_map:
            return self._score_map
        config = self.model.config
        stored = getattr(config, "crag_score_map", None)
        if stored:
            return stored
        return "softmax" if config.num_labels == 2 else "sigmoid"

    def _logits(self, features: dict[str, Any]) -> Any:
        return pooled_logits(self.model, features)

    def _encode(self, query: str, texts: Sequence[str]) -> dict[str, list]:
        pair_pooling = getattr(self.model.config, "crag_pooling", None) == "pair"
        return pair_inputs(self._tokenizer, [query] * len(texts), texts, self.max_length, pair_pooling)

    def _to_scores(self, logits: Any) -> Any:
        import numpy as np  # transformers' dependency; not imported with crag_shared

        mode = self.score_map
        if mode == "softmax":
            exp = np.exp(logits - logits.max(-1, keepdims=True))
            return 2 * exp[:, 1] / exp.sum(-1) - 1
        if mode == "clip":
            return logits[:, 0]
        return np.tanh(logits[:, 0] / 2)
