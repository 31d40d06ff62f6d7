"""Reuse the LlamaIndex embedding model you already have as CRAG's retrieval evaluator."""

from typing import Any

from llama_index.core import Settings
from llama_index.core.base.embeddings.base import BaseEmbedding

from crag_shared.adapter import EmbeddingEvaluator


def embedding_evaluator(embed_model: BaseEmbedding | None = None, **options: Any) -> EmbeddingEvaluator:
    """An `EmbeddingEvaluator` over `embed_model` (default: `Settings.embed_model`): queries through
    `get_query_embedding`, passages in one `get_text_embedding_batch` call. This is what
    `evaluator="embedding"` means in `CRAGPostprocessor`. `options` (midpoint, spread, thresholds) tune
    the mapping of cosines to scores."""
    model = embed_model or Settings.embed_model
    if not isinstance(model, BaseEmbedding):
        raise TypeError(f"embed_model must be a LlamaIndex BaseEmbedding, got {type(model).__name__}")
    return EmbeddingEvaluator(embed_query=model.get_query_embedding, embed_texts=model.get_text_embedding_batch,
                              **options)
