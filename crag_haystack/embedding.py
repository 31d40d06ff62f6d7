"""Reuse the Haystack embedders a pipeline already has as CRAG's retrieval evaluator."""

from typing import Any

from haystack import Document

from crag_shared.adapter import CRAGConfig, EmbeddingEvaluator, RetrievalEvaluator, embedding_unit


def embedding_evaluator(text_embedder: Any, document_embedder: Any | None = None,
                        **options: Any) -> EmbeddingEvaluator:
    """An `EmbeddingEvaluator` over Haystack embedders: the query through `text_embedder`
    (`run(text=...)["embedding"]`), passages in one `document_embedder` call
    (`run(documents=...)["documents"][i].embedding`), or one text-embedder call each without one.
    Warm the embedders up first (pipelines do; crag's components do it in their `warm_up`)."""
    if not callable(getattr(text_embedder, "run", None)):
        raise TypeError(f"text_embedder must be a Haystack text embedder, got {type(text_embedder).__name__}")

    def embed_query(text: str) -> list[float]:
        return list(text_embedder.run(text=text)["embedding"])

    def embed_texts(texts: list[str]) -> list[list[float]]:
        if document_embedder is None:
            return [embed_query(text) for text in texts]
        documents = document_embedder.run(documents=[Document(content=text) for text in texts])["documents"]
        return [list(document.embedding) for document in documents]

    return EmbeddingEvaluator(embed_query=embed_query, embed_texts=embed_texts, **options)


def evaluator_for(config: CRAGConfig, text_embedder: Any | None, document_embedder: Any | None
                  ) -> RetrievalEvaluator | None:
    """The evaluator instance a component needs beyond its spec: `evaluator="embedding"` is the pipeline's
    own embedders; every other spec is built by the config (None here)."""
    unit = embedding_unit(config.evaluator)
    if unit is None:
        return None
    if text_embedder is None:
        raise ValueError(f"evaluator={config.evaluator!r} needs text_embedder= (and ideally document_embedder=)")
    return embedding_evaluator(text_embedder, document_embedder, unit=unit, **(config.evaluator_options or {}))
