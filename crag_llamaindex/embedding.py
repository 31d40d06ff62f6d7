"""Reuse the LlamaIndex embedding model you already have as CRAG's retrieval evaluator."""

from typing import Any

from llama_index.core import Settings
from llama_index.core.base.embeddings.base import BaseEmbedding

from crag_shared.adapter import EmbeddingEvaluator


class _QueryEmbedding:
    """`model.get_query_embedding`, resolved at call time: LlamaIndex wraps bound methods in tracing
    proxies that cannot be pickled or deep-copied, the model itself can."""

    def __init__(self, model: BaseEmbedding) -> None:
        self.model = model

    def __call__(self, text: str) -> list[float]:
        return self.model.get_query_embedding(text)


class _TextEmbeddings(_QueryEmbedding):
    """`model.get_text_embedding_batch`: every text of one call in the model's own batches."""

    def __call__(self, texts: list[str]) -> list[list[float]]:  # type: ignore[override]
        return self.model.get_text_embedding_batch(texts)


def embedding_evaluator(embed_model: BaseEmbedding | None = None, **options: Any) -> EmbeddingEvaluator:
    """An `EmbeddingEvaluator` over `embed_model` (default: `Settings.embed_model`): queries through
    `get_query_embedding` (or the query bundle's embedding, when the retriever computed one), passages in
    one `get_text_embedding_batch` call. This is what `evaluator="embedding"` means in `CRAGPostprocessor`.
    `options` (unit, midpoint, spread, thresholds) tune the mapping of cosines to scores; without midpoint and
    spread the mapping is found for this model at first use, once per process for a model that names itself
    (`model_name`): a few dozen `get_query_embedding` calls and one batch."""
    model = embed_model or Settings.embed_model
    if not isinstance(model, BaseEmbedding):
        raise TypeError(f"embed_model must be a LlamaIndex BaseEmbedding, got {type(model).__name__}")
    name = getattr(model, "model_name", None)
    options.setdefault("model_key", f"llama_index:{model.class_name()}:{name}" if name and name != "unknown" else None)
    return EmbeddingEvaluator(embed_query=_QueryEmbedding(model), embed_texts=_TextEmbeddings(model), **options)
