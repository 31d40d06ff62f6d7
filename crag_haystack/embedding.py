"""Reuse the Haystack embedders a pipeline already has as CRAG's retrieval evaluator."""

import inspect
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from haystack import Document
from haystack.utils import ComponentDevice

from crag_shared.adapter import (
    CRAGConfig,
    EmbeddingEvaluator,
    RetrievalEvaluator,
    embedding_unit,
    evaluator_kind,
    evaluator_settings,
    saved_evaluator,
)


def embedding_evaluator(text_embedder: Any, document_embedder: Any | None = None,
                        **options: Any) -> EmbeddingEvaluator:
    """An `EmbeddingEvaluator` over Haystack embedders: the query through `text_embedder`
    (`run(text=...)["embedding"]`), passages in one `document_embedder` call
    (`run(documents=...)["documents"][i].embedding`), or one text-embedder call each without one.
    Warm the embedders up first (pipelines do; crag's components do it in their `warm_up`). Without
    `midpoint` and `spread` in `options` the mapping of cosines is found for these embedders at first use,
    once per process for embedders that name their model (`model`): a few dozen query embeddings and one
    batch of passages."""
    _expect_embedder("text_embedder", text_embedder, "text", "a text embedder (run(text=...) -> embedding)")
    if document_embedder is not None:
        _expect_embedder("document_embedder", document_embedder, "documents",
                         "a document embedder (run(documents=...) -> documents)")

    def embed_query(text: str) -> list[float]:
        return list(text_embedder.run(text=text)["embedding"])

    def embed_texts(texts: list[str]) -> list[list[float]]:
        if document_embedder is None:
            return [embed_query(text) for text in texts]
        documents = document_embedder.run(documents=[Document(content=text) for text in texts])["documents"]
        return [list(document.embedding) for document in documents]

    options.setdefault("model_key", _model_key(text_embedder, document_embedder))
    return EmbeddingEvaluator(embed_query=embed_query, embed_texts=embed_texts, **options)


def _model_key(*embedders: object) -> str | None:
    """The embedders' models (`model`, with their `prefix` and `suffix`), naming where a found scale is
    shared; None where an embedder does not name its model."""
    parts = []
    for embedder in (e for e in embedders if e is not None):
        model = getattr(embedder, "model", None)
        if not isinstance(model, str):
            return None
        parts.append(f"{type(embedder).__name__}:{model}:{getattr(embedder, 'prefix', '')}:"
                     f"{getattr(embedder, 'suffix', '')}")
    return "haystack:" + "|".join(parts)


def _expect_embedder(name: str, embedder: Any, argument: str, what: str) -> None:
    """A wrong embedder fails here, naming it, not as an evaluator fault (and a lexical fallback) later."""
    run = getattr(embedder, "run", None)
    if not callable(run) or argument not in inspect.signature(run).parameters:
        raise TypeError(f"{name} must be {what}, got {type(embedder).__name__}")


def evaluator_setting(evaluator: object, options: dict[str, Any] | None, device: ComponentDevice | None
                      ) -> tuple[str, dict[str, Any] | None, RetrievalEvaluator | None]:
    """(spec, options for the config, instance) of a component's `evaluator=`: a spec, with
    `evaluator_options` and a Haystack `device` for model evaluators, or a ready evaluator instance, saved
    as its spec and settings (`saved_evaluator`)."""
    if isinstance(evaluator, RetrievalEvaluator):
        if options or device is not None:
            raise ValueError("evaluator_options and device configure an evaluator built from a spec; give them to "
                             "the evaluator instance itself")
        spec, saved = saved_evaluator(evaluator)
        return spec, saved, evaluator
    if not isinstance(evaluator, str):
        raise TypeError(f"evaluator must be a spec string (e.g. 'lexical', 'cross-encoder:PATH') or a crag "
                        f"evaluator, got {type(evaluator).__name__}")
    if device is not None:
        if not isinstance(device, ComponentDevice):
            raise TypeError(f"device must be a haystack ComponentDevice, got {type(device).__name__}")
        if evaluator_kind(evaluator) in ("lexical", "llm", "combined"):
            raise ValueError(f"device applies to model evaluators; evaluator={evaluator!r} runs no model")
        options = {**(options or {}), "device": device.to_torch_str()}
    return evaluator, options, None


def evaluator_for(config: CRAGConfig, text_embedder: Any | None, document_embedder: Any | None,
                  instance: RetrievalEvaluator | None = None) -> RetrievalEvaluator | None:
    """The evaluator instance a component needs beyond its spec: the one given, else for
    `evaluator="embedding"` the pipeline's own embedders; every other spec is built by the config (None)."""
    unit = embedding_unit(config.evaluator)
    if instance is not None:
        return instance
    if unit is None:
        return None
    if text_embedder is None:
        raise ValueError(f"evaluator={config.evaluator!r} needs text_embedder= (and ideally document_embedder=)")
    return embedding_evaluator(text_embedder, document_embedder, unit=unit, **evaluator_settings(config))


def query_embedding_for(evaluator: RetrievalEvaluator, query: str, embedding: list[float] | None
                        ) -> AbstractContextManager[None]:
    """The pipeline's query embedding handed to an embedding judge for this run only (so the query is not
    embedded again, and no other run is judged with it); nothing to hand otherwise."""
    if embedding is not None and isinstance(evaluator, EmbeddingEvaluator):
        return evaluator.query_embedding(query, embedding)
    return nullcontext()


def deserialize_device(init_parameters: dict[str, Any]) -> None:
    """`device` back from its `ComponentDevice.to_dict()` form, in place."""
    if isinstance(init_parameters.get("device"), dict):
        init_parameters["device"] = ComponentDevice.from_dict(init_parameters["device"])
