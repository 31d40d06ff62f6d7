"""How a model reads a (query, text) pair and pools token states: shared by the cross-encoder, the embedding
evaluators, their ONNX exports and training."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .hf import require_torch


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
