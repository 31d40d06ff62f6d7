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

from ..text.words import encodable
from .base import EvaluatorConfigurationError
from .batching import BatchedPairEvaluator
from .onnx_export import MANIFEST, SESSION_DISABLED_OPTIMIZERS, exported, require_onnxruntime
from .score_map import LogitScoreMap, ScoreMap

__all__ = ["OnnxCrossEncoderEvaluator", "check_export", "encodings", "open_export", "read_config", "run_padded"]

#: How a Git LFS pointer file begins: a clone without `git lfs pull` has these in place of the weights.
LFS_POINTER = b"version https://git-lfs"


def _json_file(path: Path) -> dict[str, object]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise EvaluatorConfigurationError(f"{path}: not readable JSON ({type(error).__name__}: {error})") from None
    if not isinstance(value, dict):
        raise EvaluatorConfigurationError(f"{path}: expected a JSON object, got {type(value).__name__}")
    return value


def check_export(directory: Path, max_length: int) -> tuple[dict[str, object], dict[str, object]]:
    """(manifest, config) of an export directory, checked before anything loads: each file there and readable,
    the model file inside the export (never a path out of it), not a Git LFS pointer, `max_length` within the
    model's positions, `crag_thresholds` a valid pair. Each fault is an `EvaluatorConfigurationError` naming
    the file."""
    manifest = _json_file(directory / MANIFEST)
    name = manifest.get("file")
    model = (directory / name).resolve() if isinstance(name, str) and name else None
    if model is None or not model.is_relative_to(directory.resolve()):
        raise EvaluatorConfigurationError(f"{directory / MANIFEST}: 'file' must name a file inside the export, "
                                          f"got {name!r}")
    if not model.is_file():
        raise EvaluatorConfigurationError(f"{model}: the model file named by {MANIFEST} is missing")
    with model.open("rb") as head:
        if head.read(len(LFS_POINTER)) == LFS_POINTER:
            raise EvaluatorConfigurationError(f"{model}: a Git LFS pointer, not the weights (run `git lfs pull`)")
    if not (directory / "tokenizer.json").is_file():
        raise EvaluatorConfigurationError(f"{directory / 'tokenizer.json'}: the export's tokenizer is missing")
    config = _json_file(directory / "config.json")
    positions = config.get("max_position_embeddings")
    if isinstance(positions, int) and max_length > positions:
        raise EvaluatorConfigurationError(f"max_length={max_length} is above the {positions} positions of the model "
                                          f"({directory / 'config.json'})")
    fitted = config.get("crag_thresholds")
    if fitted is not None and not (isinstance(fitted, list) and len(fitted) == 2 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and -1 <= v <= 1 for v in fitted)
            and fitted[0] >= fitted[1]):
        raise EvaluatorConfigurationError(f"{directory / 'config.json'}: crag_thresholds must be [upper, lower] in "
                                          f"[-1, 1] with upper >= lower, got {fitted!r}"[:300])
    return manifest, config


def open_export(directory: Path, max_length: int, num_threads: int | None) -> tuple[Any, Any, dict[str, Any]]:
    """(ONNX Runtime session, unpadded truncating tokenizer, manifest) of an export directory, checked first."""
    ort = require_onnxruntime()
    from tokenizers import Tokenizer

    manifest, _ = check_export(directory, max_length)
    options = ort.SessionOptions()
    if num_threads:
        options.intra_op_num_threads = num_threads
    session = ort.InferenceSession(str(directory / str(manifest["file"])), options, providers=["CPUExecutionProvider"],
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
    """Token ids, masks and segment ids of texts or (text, text) pairs, unpadded (lone surrogates as U+FFFD)."""
    encoded = tokenizer.encode_batch([encodable(i) if isinstance(i, str) else tuple(map(encodable, i))
                                      for i in items])
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
    values = _json_file(directory / "config.json")
    labels = values.get("id2label")
    values.setdefault("num_labels", len(labels) if isinstance(labels, dict) and labels else 1)
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
        if (Path(model) / MANIFEST).is_file():  # an export: its faults are named here, not at the first query
            check_export(Path(model), self.max_length)

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
