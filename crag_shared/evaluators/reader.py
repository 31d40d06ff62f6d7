"""The reader: crag's own trained judge of answerability, "does this passage state the answer to this question?".

A judge that reads word presence cannot tell that "Middlemarch is a novel by George Eliot." answers "Who wrote
Middlemarch?", nor that a passage about the Pro plan's limits does not answer a question about the Team plan.
The reader is a small cross-encoder (all-MiniLM-L6-v2, fine-tuned by `crag-bench train-reader` on answer-bearing
passages and strips, paraphrased ones included, against near misses of every kind: the article's other
paragraphs, questions written to be unanswerable from their paragraph, the entity's other facts, another plan
or model or version), exported to ONNX with int8 weights. It runs on a CPU with onnxruntime and tokenizers,
no torch, and its weights install offline with the `crag-reader` distribution (`crag-shared[reader]`; the
LlamaIndex and Haystack adapters install it). Its thresholds were fitted with it and ship in its config.
The model card (the distribution's README) gives its data, recipe, figures and limits.
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path

from .base import EvaluatorConfigurationError
from .onnx import OnnxCrossEncoderEvaluator, check_export
from .onnx_export import MANIFEST

__all__ = ["ReaderEvaluator", "shipped_reader"]

READER_HINT = ("the reader judge ships in the crag-reader distribution: pip install 'crag-shared[reader]' "
               "(crag-llamaindex and crag-haystack install it)")
#: Thresholds for an export that carries none (a reader trained without a fit).
UNFITTED_THRESHOLDS = (0.0, -0.5)


def shipped_reader() -> Path:
    """The directory of the installed reader's export; ImportError saying what to install when the
    `crag-reader` distribution or the ONNX runtime is missing."""
    try:
        package = import_module("crag_reader")
        import_module("onnxruntime")
        import_module("tokenizers")
    except ImportError as error:
        raise ImportError(f"{READER_HINT} ({error})") from None
    directory = Path(package.model_dir())
    if not (directory / MANIFEST).is_file():
        raise EvaluatorConfigurationError(f"crag-reader at {directory.parent} holds no weights ({MANIFEST} is "
                                          "missing): reinstall crag-reader")
    return directory


class ReaderEvaluator(OnnxCrossEncoderEvaluator):
    """Scores how surely each text states the answer to the question, in [-1, 1] (spec `"reader"`).

    `model`: None for the shipped reader, or the directory of a reader you trained and exported yourself
    (`crag-bench train-reader`; spec `"reader:PATH"`). `thresholds`: None for the ones fitted with the
    weights (`crag_thresholds` in its config). Scores texts one at a time (an int8 score never depends on
    the other texts), `num_threads` ONNX Runtime threads (default: all cores).
    """

    #: Trained on passages read with their titles half the time, it tells answers from near misses better
    #: with them (`crag-bench judges --score-titles`).
    reads_titles = True

    def __init__(self, model: str | Path | None = None, *, thresholds: tuple[float, float] | None = None,
                 num_threads: int | None = None, max_length: int = 256, batch_size: int = 1) -> None:
        directory = Path(model) if model is not None else shipped_reader()
        if not (directory / MANIFEST).is_file():
            raise EvaluatorConfigurationError(f"reader:{directory}: not a reader export (no {MANIFEST}); export "
                                              "a trained reader with `crag-bench train-reader`")
        _, config = check_export(directory, max_length)  # a damaged export fails here, naming its file
        fitted = config.get("crag_thresholds")
        upper, lower = fitted if isinstance(fitted, list) else UNFITTED_THRESHOLDS  # checked by check_export
        self.fitted_thresholds = (float(upper), float(lower))
        self.shipped = model is None
        super().__init__(str(directory), quantize=True, thresholds=thresholds, num_threads=num_threads,
                         max_length=max_length, batch_size=batch_size)

    @property
    def thresholds(self) -> tuple[float, float]:
        """The thresholds given, else those fitted with the weights."""
        own = self._thresholds
        return (own[0], own[1]) if own is not None else self.fitted_thresholds
