"""The weights of crag's reader, the trained answerability judge (`crag_shared.evaluators.ReaderEvaluator`,
spec "reader"): an ONNX int8 export of a fine-tuned all-MiniLM-L6-v2 cross-encoder with its tokenizer and
fitted thresholds, in `model/`. The model card is this distribution's README."""

from __future__ import annotations

from pathlib import Path

__all__ = ["model_dir"]


def model_dir() -> Path:
    """The directory of the reader's export (loads with onnxruntime and tokenizers, no torch)."""
    return Path(__file__).resolve().with_name("model")
