"""Retrieval evaluators: one interface; backends lexical, T5, cross-encoder and embedding (torch or ONNX
Runtime), a fitted combination, LLM judge."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from ..llm import LLM
from .base import Evaluation, EvaluatorConfigurationError, RetrievalEvaluator
from .combined import CombinedEvaluator
from .cross_encoder import CrossEncoderEvaluator
from .embedding import EmbeddingEvaluator, embedding_kind
from .lexical import LexicalEvaluator
from .llm import LLMEvaluator
from .onnx import OnnxCrossEncoderEvaluator
from .onnx_embedding import OnnxEmbeddingEvaluator
from .t5 import T5Evaluator

__all__ = [
    "CombinedEvaluator",
    "CrossEncoderEvaluator",
    "EmbeddingEvaluator",
    "Evaluation",
    "EvaluatorConfigurationError",
    "LLMEvaluator",
    "LexicalEvaluator",
    "OnnxCrossEncoderEvaluator",
    "OnnxEmbeddingEvaluator",
    "RetrievalEvaluator",
    "T5Evaluator",
    "embedding_unit",
    "evaluator_from_spec",
    "shared_evaluator",
]


def evaluator_from_spec(spec: str, *, llm: LLM | None = None, **kwargs: Any) -> RetrievalEvaluator:
    """Build an evaluator from its spec: 'lexical', 't5:PATH_OR_ID', 'cross-encoder:PATH_OR_ID',
    'onnx:PATH_OR_ID', 'embedding:PATH_OR_ID' (bi-encoder cosine of the best of the sentences that match the
    question's words; 'embedding-sentence:' of every sentence, 'embedding-passage:' of the whole passage),
    'onnx-embedding[-sentence|-passage]:PATH_OR_ID' (the same on ONNX Runtime), 'combined:FILE.json' or
    'combined:NAME' (a fitted combination), or 'llm' / 'llm:per_document' (the LLM judge, which needs `llm`).

    This is the one place specs are read: the CLI, the adapters and serialized components all come
    here. A target that is a path (absolute, relative with ./ or ../, or under ~) must exist: a typo
    fails here, not at the first query; anything else is taken as a hub id.
    """
    if not isinstance(spec, str):
        raise TypeError(f"an evaluator spec is a string, got {type(spec).__name__}")
    kind, _, target = spec.partition(":")
    kind = kind.strip().lower()
    target = target.strip()
    if kind == "llm":
        if llm is None:
            raise ValueError(f"evaluator {spec!r} needs an LLM: pass llm=... (a chat generator in Haystack)")
        return LLMEvaluator(llm, mode=target or "batched", **kwargs)
    if target and kind != "lexical" and _looks_local(target) and not Path(target).expanduser().exists():
        raise ValueError(f"evaluator spec {spec!r}: no such file or directory {target!r}")
    if kind == "lexical" and not target:
        return LexicalEvaluator(**kwargs)
    if kind == "t5" and target:
        return T5Evaluator(target, **kwargs)
    if kind in ("cross-encoder", "cross_encoder", "ce") and target:
        return CrossEncoderEvaluator(target, **kwargs)
    if kind == "onnx" and target:
        return OnnxCrossEncoderEvaluator(target, **kwargs)
    if kind == "combined" and target:
        shipped = SHIPPED_COMBINATIONS / f"{target}.json"
        if "/" in target or not shipped.is_file():
            return CombinedEvaluator.load(target)
        combination = CombinedEvaluator.load(shipped)
        combination.path = target  # its spec stays `combined:NAME`, wherever crag is installed
        return combination
    embedding = embedding_kind(kind)
    if embedding and target:
        backend = EmbeddingEvaluator if embedding[0] == "embedding" else OnnxEmbeddingEvaluator
        return backend(target, unit=embedding[1], **kwargs)
    if embedding_unit(spec):
        raise ValueError(f"evaluator {spec!r} without a path uses the framework's embedding model: the "
                         "adapters build it (LlamaIndex Settings.embed_model, Haystack embedders); here "
                         f"pass '{kind}:PATH'")
    raise ValueError(f"unknown evaluator spec {spec!r}: use 'lexical', 't5:PATH', 'cross-encoder:PATH', "
                     "'onnx:PATH', 'embedding[-sentence|-passage]:PATH', 'onnx-embedding[-sentence|-passage]:PATH', "
                     "'combined:FILE' or 'llm'")


#: Combinations that ship with crag (`combined:NAME`): lexical-minilm is LexicalEvaluator + all-MiniLM-L6-v2's
#: cosine (unit "matched"), fitted on qa_pairs train. Its encoder is named by hub id; to use a local copy,
#: `CombinedEvaluator.load(SHIPPED_COMBINATIONS / "lexical-minilm.json", members=[...]).save("mine.json")`.
SHIPPED_COMBINATIONS = Path(__file__).resolve().parent.parent / "combinations"


def embedding_unit(spec: str) -> str | None:
    """For the specs that name the framework's own embedding model ("embedding", "embedding-sentence",
    "embedding-passage"), the unit the adapters build `EmbeddingEvaluator` with; None for every other spec."""
    embedding = embedding_kind(spec.strip().lower())
    return embedding[1] if embedding and embedding[0] == "embedding" else None


_SHARED: dict[str, RetrievalEvaluator] = {}
_SHARED_LOCK = threading.Lock()


def shared_evaluator(spec: str) -> RetrievalEvaluator:
    """One evaluator per spec in this process: every component or corrector naming the same model
    shares one instance, so the model is loaded once (also after a pipeline is loaded from YAML).
    Evaluators score without per-call state, so sharing is safe; LLM judges are never shared."""
    with _SHARED_LOCK:
        evaluator = _SHARED.get(spec)
        if evaluator is None:
            evaluator = _SHARED[spec] = evaluator_from_spec(spec)
        return evaluator


def _looks_local(target: str) -> bool:
    return target.startswith(("/", "./", "../", "~", ".\\")) or Path(target).is_absolute() or target.count("/") > 1
