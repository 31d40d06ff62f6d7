"""EmbeddingEvaluator on ONNX Runtime: the encoder exported once, fused and int8-quantized for CPUs.

The same export as the cross-encoder backend (`export_onnx(..., embedding=True)`), whose graph ends in
the mean-pooled, L2-normalised embedding, so scores equal the torch path's (fp32 to 1e-4) and a loaded
export needs only onnxruntime, tokenizers and numpy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .embedding import EmbeddingEvaluator
from .onnx import encodings, open_export, read_config, run_padded
from .onnx_export import exported


class OnnxEmbeddingEvaluator(EmbeddingEvaluator):
    """`EmbeddingEvaluator(model)` scored on ONNX Runtime (spec `onnx-embedding:PATH`, or
    `onnx-embedding-sentence:PATH`, `onnx-embedding-passage:PATH` for the other units).

    `model` is an encoder checkpoint (exported on first use into `export_dir`, default a cache entry named
    by the checkpoint's files) or a directory written by `crag export-onnx --embedding`. `quantize=True`
    (default) uses int8 weights; `num_threads` sets ONNX Runtime's intra-op threads (default: all cores).
    Each text is embedded alone (`batch_size=1`): int8 quantizes a batch's activations with one scale, so a
    text's embedding in a batch moves with its neighbours; alone it is exactly batch-independent, for a
    small cost in time (docs: Benchmarks).
    """

    spec_prefix = "onnx-embedding"

    def __init__(self, model: str, *, quantize: bool = True, export_dir: str | Path | None = None,
                 num_threads: int | None = None, batch_size: int = 1, **kwargs: Any) -> None:
        if kwargs.get("device") not in (None, "cpu", "auto"):
            raise ValueError("the ONNX backend runs on the CPU; drop device or use EmbeddingEvaluator")
        super().__init__(model, batch_size=batch_size, **kwargs)
        if "model_key" not in kwargs:  # int8 moves cosines a little: its scale is its own
            self._scale_key = f"{self._scale_key}:{'int8' if quantize else 'fp32'}"
        self.quantize = quantize
        self.export_dir = Path(export_dir) if export_dir else None
        self.num_threads = num_threads

    def _load(self) -> None:
        directory = exported(str(self.model_name), self.quantize, self.export_dir, embedding=True,
                             local_files_only=self.local_files_only)
        session, self._tokenizer, manifest = open_export(directory, self.max_length, self.num_threads)
        self._pad_id = getattr(read_config(directory), "pad_token_id", 0) or 0
        self._inputs = manifest["inputs"]
        self._model = session
        self.device = "cpu"

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        batch = encodings(self._tokenizer, texts)
        width = max(len(ids) for ids in batch["input_ids"])
        return run_padded(self._model, self._inputs, batch, width, self._pad_id).tolist()
