"""Any Hugging Face reranker / cross-encoder as a CRAG evaluator."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from .hf import HFSequenceEvaluator, require_torch

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


def pair_inputs(tokenizer: Any, queries: Sequence[str], texts: Sequence[str], max_length: int,
                token_types: bool) -> dict[str, list]:
    """(query, passage) pairs tokenized as a cross-encoder reads them; shared by scoring and training.
    `token_types` asks for segment ids, which pair pooling needs to tell query from passage."""
    extra = {"return_token_type_ids": True} if token_types else {}
    return dict(tokenizer(list(queries), list(texts), truncation="longest_first", max_length=max_length, **extra))


def _masked_mean(hidden: Any, mask: Any) -> Any:
    mask = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)


def mean_pooled(hidden: Any, mask: Any) -> Any:
    """A sentence embedding as sentence-transformers makes it: the attention-masked token mean, L2-normalised
    (shared by `EmbeddingEvaluator` and its ONNX export)."""
    return require_torch()[0].nn.functional.normalize(_masked_mean(hidden, mask).float(), dim=-1)


def pooled_logits(model: Any, features: dict[str, Any]) -> Any:
    """Logits of a sequence-classification model under its `crag_pooling` (shared by training and inference).

    - None: the model's own head ([CLS] pooler for BERT);
    - "mean": `classifier` over the attention-masked mean of the last hidden states;
    - "pair": question and passage tokens (token type 0 and 1) are mean-pooled separately, L2-normalised,
      and `classifier` reads their elementwise product: with uniform weights that is a scaled cosine,
      so a sentence encoder starts from its pretrained notion of relatedness and training refines it.
    """
    pooling = getattr(model.config, "crag_pooling", None)
    if pooling is None:
        return model(**features).logits
    inputs = {k: v for k, v in features.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
    hidden = model.base_model(**inputs).last_hidden_state
    mask = features["attention_mask"]
    if pooling == "mean":
        return model.classifier(_masked_mean(hidden, mask))
    if pooling == "pair":
        if "token_type_ids" not in features:
            raise ValueError("crag_pooling='pair' needs a tokenizer that returns token_type_ids (BERT-style pairs)")
        types = features["token_type_ids"]
        question = _masked_mean(hidden, mask * (types == 0))
        passage = _masked_mean(hidden, mask * (types == 1))
        normalize = require_torch()[0].nn.functional.normalize
        return model.classifier(normalize(question, dim=-1) * normalize(passage, dim=-1))
    raise ValueError(f"unknown crag_pooling {pooling!r} in the model config")
