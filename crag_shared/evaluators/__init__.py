"""Retrieval evaluators: one interface; backends lexical, T5, cross-encoder (torch or ONNX Runtime), LLM judge."""

from __future__ import annotations

from .base import Evaluation, RetrievalEvaluator
from .cross_encoder import CrossEncoderEvaluator
from .lexical import LexicalEvaluator
from .llm import LLMEvaluator
from .onnx import OnnxCrossEncoderEvaluator
from .t5 import T5Evaluator

__all__ = [
    "CrossEncoderEvaluator",
    "Evaluation",
    "LLMEvaluator",
    "LexicalEvaluator",
    "OnnxCrossEncoderEvaluator",
    "RetrievalEvaluator",
    "T5Evaluator",
    "evaluator_from_spec",
]


def evaluator_from_spec(spec: str, **kwargs) -> RetrievalEvaluator:
    """Build an evaluator from 'lexical', 't5:PATH_OR_ID', 'cross-encoder:PATH_OR_ID' or 'onnx:PATH_OR_ID'.

    This is how the CLI and serialized framework components name their evaluator.
    """
    kind, _, target = spec.partition(":")
    kind = kind.strip().lower()
    if kind == "lexical" and not target:
        return LexicalEvaluator(**kwargs)
    if kind == "t5" and target:
        return T5Evaluator(target, **kwargs)
    if kind in ("cross-encoder", "cross_encoder", "ce") and target:
        return CrossEncoderEvaluator(target, **kwargs)
    if kind == "onnx" and target:
        return OnnxCrossEncoderEvaluator(target, **kwargs)
    raise ValueError(f"unknown evaluator spec {spec!r}: use 'lexical', 't5:PATH', 'cross-encoder:PATH' or 'onnx:PATH'")
