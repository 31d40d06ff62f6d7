"""The paper's evaluator format: a T5 regression head scoring "query [SEP] passage"."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .hf import HFSequenceEvaluator


class T5Evaluator(HFSequenceEvaluator):
    """Loads the released CRAG evaluator (or any checkpoint trained the same way).

    `T5ForSequenceClassification` with `num_labels=1`, fine-tuned on labels +1/-1; the raw logit is the
    score, clipped to [-1, 1]. Default thresholds are the paper's PopQA values (upper 0.59, lower -0.99).
    `model` is a local directory or a hub id, loaded with `from_pretrained`.
    """

    default_thresholds = (0.59, -0.99)
    separator = " [SEP] "

    def _model_class(self, transformers: Any) -> Any:
        return transformers.T5ForSequenceClassification

    def _encode(self, query: str, texts: Sequence[str]) -> dict[str, list]:
        return t5_inputs(self._tokenizer, [query] * len(texts), texts, self.max_length)

    def _to_scores(self, logits: Any) -> Any:
        return logits[:, 0]


def t5_inputs(tokenizer: Any, queries: Sequence[str], texts: Sequence[str], max_length: int) -> dict[str, list]:
    """The paper's input, "query [SEP] passage", tokenized; shared by scoring and `crag train-evaluator`."""
    inputs = [f"{query}{T5Evaluator.separator}{text}" for query, text in zip(queries, texts)]
    return dict(tokenizer(inputs, truncation=True, max_length=max_length))
