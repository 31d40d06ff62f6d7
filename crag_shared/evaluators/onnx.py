"""Cross-encoders on ONNX Runtime: the same model, exported once, fused and int8-quantized for CPUs.

Why a second backend: on a CPU a MiniLM-class cross-encoder is compute-bound, so batching buys little
once padding is gone. ONNX Runtime fuses attention, GELU and layer norms and runs int8 GEMMs, faster than
eager torch and torch's own int8 (docs: Benchmarks). ORT's per-call overhead is small enough that scoring
each pair alone (no padding at all) is fastest, hence `batch_size=1` by default.

The export (torch + transformers needed, once) writes a self-contained directory: `model.onnx` or
`model_int8.onnx`, the tokenizer, the config (with `crag_*` settings) and `crag_onnx.json`. Loading that
directory needs only onnxruntime and a tokenizer, not torch.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from .batching import BatchedPairEvaluator
from .onnx_export import MANIFEST, SESSION_DISABLED_OPTIMIZERS, exported, require_onnxruntime
from .score_map import LogitScoreMap, ScoreMap


def open_export(directory: Path, max_length: int, num_threads: int | None) -> tuple[Any, Any, dict[str, Any]]:
    """(ONNX Runtime session, unpadded truncating tokenizer, manifest) of an export directory."""
    ort = require_onnxruntime()
    from tokenizers import Tokenizer

    manifest = json.loads((directory / MANIFEST).read_text())
    options = ort.SessionOptions()
    if num_threads:
        options.intra_op_num_threads = num_threads
    session = ort.InferenceSession(str(directory / manifest["file"]), options, providers=["CPUExecutionProvider"],
                                   disabled_optimizers=SESSION_DISABLED_OPTIMIZERS)
    tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length, strategy="longest_first")
    return session, tokenizer, manifest


def run_padded(session: Any, inputs: Sequence[str], batch: dict[str, list], width: int, pad_id: int) -> Any:
    """Run one batch of unpadded encodings, right-padded to `width`, as float32 numpy."""
    import numpy as np

    feeds = {}
    for name in inputs:
        padded = np.full((len(batch[name]), width), pad_id if name == "input_ids" else 0, dtype=np.int64)
        for row, values in enumerate(batch[name]):
            padded[row, :len(values)] = values
        feeds[name] = padded
    return session.run(None, feeds)[0].astype(np.float32)


def encodings(tokenizer: Any, items: Sequence[Any]) -> dict[str, list]:
    """Token ids, masks and segment ids of texts or (text, text) pairs, unpadded."""
    encoded = tokenizer.encode_batch(list(items))
    return {"input_ids": [e.ids for e in encoded], "attention_mask": [e.attention_mask for e in encoded],
            "token_type_ids": [e.type_ids for e in encoded]}


@dataclass
class OnnxModel:
    """The loaded session, with the checkpoint's config that the score map and thresholds read."""

    session: Any
    config: SimpleNamespace
    inputs: list[str]


def read_config(directory: Path) -> SimpleNamespace:
    """The exported checkpoint's config.json, as attributes (what the score map and padding read)."""
    values = json.loads((directory / "config.json").read_text())
    values.setdefault("num_labels", len(values.get("id2label") or {"0": 0}))
    return SimpleNamespace(**values)


class OnnxCrossEncoderEvaluator(LogitScoreMap, BatchedPairEvaluator):
    """A cross-encoder on ONNX Runtime: `CrossEncoderEvaluator`'s scores (fp32 to 1e-4; int8 within a few
    hundredths) and batching, without torch at scoring time.

    `model` is either a directory written by `export_onnx` / `crag export-onnx`, which loads with only
    onnxruntime, tokenizers and numpy installed, or any checkpoint `CrossEncoderEvaluator` takes, exported
    on first use (torch and transformers needed then) into `export_dir` (default: a cache directory named
    by the checkpoint's path and file times). `quantize=True` (default) uses int8 weights. `num_threads`
    sets ONNX Runtime's intra-op threads (default: all cores). `score_map` as in `LogitScoreMap`.
    """

    def __init__(self, model: str, *, quantize: bool = True, batch_size: int = 1,
                 export_dir: str | Path | None = None, score_map: ScoreMap | None = None,
                 device: str | None = None, **kwargs: Any) -> None:
        if device not in (None, "cpu", "auto") or kwargs.pop("dtype", None):
            raise ValueError("the ONNX backend runs on the CPU in float32/int8; drop device/dtype or use "
                             "CrossEncoderEvaluator")
        self._set_score_map(score_map)
        super().__init__(model, quantize=quantize, batch_size=batch_size, **kwargs)
        self.export_dir = Path(export_dir) if export_dir else None

    def _load(self) -> None:
        directory = exported(self.model_name, self.quantize, self.export_dir, local_files_only=self.local_files_only)
        session, self._tokenizer, manifest = open_export(directory, self.max_length, self.num_threads)
        self._model = OnnxModel(session, read_config(directory), manifest["inputs"])
        self.device = "cpu"

    def _encode(self, query: str, texts: Sequence[str]) -> dict[str, list]:
        return encodings(self._tokenizer, [(query, text) for text in texts])

    def _batch_logits(self, batch: dict[str, list]) -> Any:
        width = self._padded(max(len(ids) for ids in batch["input_ids"]))
        return run_padded(self._model.session, self._model.inputs, batch, width,
                          getattr(self._model.config, "pad_token_id", 0) or 0)
