"""How a reranker's logits become CRAG scores in [-1, 1]: shared by every cross-encoder backend."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

ScoreMap = Literal["sigmoid", "clip", "softmax"]


class LogitScoreMap:
    """The logit-to-score map of a cross-encoder, whatever runs the model (torch, ONNX Runtime).

    Logits z become scores in [-1, 1] by `score_map`:
    - "sigmoid": 2·σ(z) − 1 = tanh(z/2), for rerankers trained with a relevance probability (MS MARCO
      MiniLM cross-encoders, bge-reranker); a score of 0 means p(relevant) = 0.5;
    - "clip": z clipped to [-1, 1], for regression heads trained on ±1 labels (what `crag
      train-evaluator` writes);
    - "softmax": 2·p(label 1) − 1, for two-label classifiers.
    Left as None, the map stored in the checkpoint's config (`crag_score_map`) is used, else "softmax"
    for two labels and "sigmoid" otherwise. The class using it provides `model.config`.
    """

    default_thresholds: ClassVar[tuple[float, float]] = (0.5, -0.9)
    model: Any

    def _set_score_map(self, score_map: ScoreMap | None) -> None:
        if score_map not in (None, "sigmoid", "clip", "softmax"):
            raise ValueError(f"score_map must be 'sigmoid', 'clip' or 'softmax', got {score_map!r}")
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

    def _to_scores(self, logits: Any) -> Any:
        import numpy as np  # a dependency of every backend; not imported with crag_shared

        mode = self.score_map
        if mode == "softmax":
            exp = np.exp(logits - logits.max(-1, keepdims=True))
            return 2 * exp[:, 1] / exp.sum(-1) - 1
        if mode == "clip":
            return logits[:, 0]
        return np.tanh(logits[:, 0] / 2)
