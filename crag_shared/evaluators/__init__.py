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
from .embedding import EmbeddingEvaluator
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
    "evaluator_from_spec",
    "shared_evaluator",
]


def evaluator_from_spec(spec: str, *, llm: LLM | None = None, **kwargs: Any) -> RetrievalEvaluator:
    """Build an evaluator from its spec: 'lexical', 't5:PATH_OR_ID', 'cross-encoder:PATH_OR_ID',
    'onnx:PATH_OR_ID', 'embedding:PATH_OR_ID' (bi-encoder cosine), 'onnx-embedding:PATH_OR_ID' (the same
    on ONNX Runtime), 'combined:FILE.json' (a fitted
    combination), or 'llm' / 'llm:per_document' (the LLM judge, which needs `llm`).

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
        return CombinedEvaluator.load(target)
    if kind == "embedding" and target:
        return EmbeddingEvaluator(target, **kwargs)
    if kind == "onnx-embedding" and target:
        return OnnxEmbeddingEvaluator(target, **kwargs)
    if kind == "embedding":
        raise ValueError("evaluator 'embedding' without a path uses the framework's embedding model: the "
                         "adapters build it (LlamaIndex Settings.embed_model, Haystack embedders); here "
                         "pass 'embedding:PATH'")
    raise ValueError(f"unknown evaluator spec {spec!r}: use 'lexical', 't5:PATH', 'cross-encoder:PATH', "
                     "'onnx:PATH', 'embedding:PATH', 'onnx-embedding:PATH', 'combined:FILE' or 'llm'")


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
