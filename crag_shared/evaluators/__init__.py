"""Retrieval evaluators: one interface; backends lexical, T5, cross-encoder and embedding (torch or ONNX
Runtime), a fitted combination, LLM judge."""

from __future__ import annotations

from .base import Evaluation, EvaluatorConfigurationError, RetrievalEvaluator
from .combined import CombinedEvaluator
from .cross_encoder import CrossEncoderEvaluator
from .default import default_evaluator
from .embedding import EmbeddingEvaluator
from .lexical import LexicalEvaluator
from .llm import LLMEvaluator
from .onnx import OnnxCrossEncoderEvaluator
from .onnx_embedding import OnnxEmbeddingEvaluator
from .reader import ReaderEvaluator
from .spec import (
    EVALUATOR_SPECS,
    SHIPPED_COMBINATIONS,
    describe,
    embedding_unit,
    evaluator_from_spec,
    evaluator_kind,
    evaluator_spec,
    load_combination,
    save_combination,
    shared_evaluator,
)
from .t5 import T5Evaluator

__all__ = [
    "EVALUATOR_SPECS",
    "SHIPPED_COMBINATIONS",
    "CombinedEvaluator",
    "CrossEncoderEvaluator",
    "EmbeddingEvaluator",
    "Evaluation",
    "EvaluatorConfigurationError",
    "LLMEvaluator",
    "LexicalEvaluator",
    "OnnxCrossEncoderEvaluator",
    "OnnxEmbeddingEvaluator",
    "ReaderEvaluator",
    "RetrievalEvaluator",
    "T5Evaluator",
    "default_evaluator",
    "describe",
    "embedding_unit",
    "evaluator_from_spec",
    "evaluator_kind",
    "evaluator_spec",
    "load_combination",
    "save_combination",
    "shared_evaluator",
]
