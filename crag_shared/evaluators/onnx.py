"""Cross-encoders on ONNX Runtime: the same model, exported once, fused and int8-quantized for CPUs.

Why a second backend: on a CPU a MiniLM-class cross-encoder is compute-bound, so batching buys little
once padding is gone. ONNX Runtime fuses attention, GELU and layer norms and runs int8 GEMMs;
measured on PopQA (2-core AMD EPYC, AVX2) it scores ~2x the pairs/s of eager torch, ~1.4x torch's own int8.
ORT's per-call overhead is small enough that scoring each pair alone (no padding at all) is fastest,
hence `batch_size=1` by default.

The export (torch + transformers needed, once) writes a self-contained directory: `model.onnx` or
`model_int8.onnx`, the tokenizer, the config (with `crag_*` settings) and `crag_onnx.json`. Loading that
directory needs only onnxruntime and a tokenizer, not torch.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ..cache import cache_dir
from .cross_encoder import CrossEncoderEvaluator, mean_pooled, pooled_logits
from .hf import require_torch

INSTALL_HINT = "the ONNX backend needs onnxruntime and onnx: pip install 'crag-shared[onnx]'"
MANIFEST = "crag_onnx.json"
#: Architectures whose attention, GELU and layer norms ONNX Runtime's BERT optimizer fuses.
FUSABLE = {"bert", "roberta", "xlm-roberta", "electra", "camembert"}
#: Fusions left out, at export and again at session load (ORT would redo them there): on CPU the fused
#: SkipLayerNormalization and BiasGelu kernels are slower than the plain ops they replace (README, Benchmarks).
SESSION_DISABLED_OPTIMIZERS = ["SkipLayerNormFusion", "BiasGeluFusion"]
#: Int8 covers only matrix products: the embeddings (and a crag head, exported as Gemm) stay float. The
#: weights are quantized to 7 bits (`reduce_range`): CPUs with AVX2 but no VNNI multiply u8 x s8 with an
#: instruction whose 16-bit sums saturate, which with full 8-bit weights moves scores far (README).
QUANTIZED_OPS = ["MatMul", "Attention"]
#: Bumped whenever the export changes, so cached exports of the same checkpoint are redone.
EXPORT_FORMAT = 3


def onnx_file(quantize: bool) -> str:
    return "model_int8.onnx" if quantize else "model.onnx"


def _require_onnxruntime() -> Any:
    try:
        import onnxruntime
    except ImportError as error:  # pragma: no cover - exercised only without the extra
        raise ImportError(INSTALL_HINT) from error
    return onnxruntime


def _fingerprint(model: str) -> str:
    """Names the cache entry: the model id or path plus, for a local directory, its files' sizes and times,
    so retrained weights get a fresh export."""
    parts = [f"format {EXPORT_FORMAT}", str(Path(model).resolve()) if Path(model).exists() else model]
    if Path(model).is_dir():
        parts += [f"{f.name}:{f.stat().st_size}:{f.stat().st_mtime_ns}" for f in sorted(Path(model).iterdir())
                  if f.is_file()]
    return hashlib.sha1("\n".join(parts).encode()).hexdigest()[:16]


def default_export_dir(model: str, quantize: bool, embedding: bool = False) -> Path:
    """One cache entry per checkpoint state, precision and head, so float and int8 exports (or a checkpoint
    exported as a cross-encoder and as an encoder) never replace each other."""
    kind = ("-embedding" if embedding else "") + ("-int8" if quantize else "-fp32")
    return cache_dir("onnx", f"{Path(model).name or 'model'}-{_fingerprint(model)}{kind}")


def exported(model: str, quantize: bool, export_dir: Path | None, *, embedding: bool = False,
             local_files_only: bool = False) -> Path:
    """The export directory for `model`: `model` itself when it is one (its precision and head must be the
    ones asked for), else `export_dir` or the cache entry, exported there on first use."""
    source = Path(model)
    if (source / MANIFEST).exists():
        manifest = json.loads((source / MANIFEST).read_text())
        if manifest["quantized"] != quantize:
            raise ValueError(f"{source} holds a {'quantized' if manifest['quantized'] else 'float'} export; "
                             f"pass quantize={manifest['quantized']}")
        if (manifest.get("output") == "embedding") != embedding:
            raise ValueError(f"{source} holds an export of {'an encoder' if not embedding else 'a cross-encoder'}; "
                             f"use {'onnx-embedding' if not embedding else 'onnx'}:{source}")
        return source
    target = export_dir or default_export_dir(model, quantize, embedding)
    if not (target / onnx_file(quantize)).exists():
        export_onnx(model, target, quantize=quantize, local_files_only=local_files_only, embedding=embedding)
    return target


def open_export(directory: Path, max_length: int, num_threads: int | None) -> tuple[Any, Any, dict[str, Any]]:
    """(ONNX Runtime session, unpadded truncating tokenizer, manifest) of an export directory."""
    ort = _require_onnxruntime()
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


def export_onnx(model: str, target: str | Path, *, quantize: bool = True, local_files_only: bool = False,
                embedding: bool = False) -> Path:
    """Export a sequence-classification checkpoint (with its `crag_pooling`, if any) to `target`; with
    `embedding`, a sentence encoder instead, whose graph ends in the mean-pooled, L2-normalised embedding.

    Uses torch's TorchScript exporter (opset 17), whose graphs ONNX Runtime's BERT optimizer can fuse
    (the dynamo exporter's graphs currently break its quantizer) into Attention, embedding and layer-norm
    ops, all but the slow ones named in `SESSION_DISABLED_OPTIMIZERS`; then dynamic int8 quantization of the
    weights of `QUANTIZED_OPS` when `quantize`, per channel (per tensor, a trained crag head moved scores by up
    to 1.2) and 7-bit (see `QUANTIZED_OPS`).
    """
    torch, transformers = require_torch()
    _require_onnxruntime()
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers import optimizer
    from onnxruntime.transformers.fusion_options import FusionOptions

    target = Path(target)
    tokenizer = transformers.AutoTokenizer.from_pretrained(model, local_files_only=local_files_only)
    if not tokenizer.is_fast:
        raise ValueError(f"{model}: the ONNX backend needs a fast (tokenizers) tokenizer, which this model lacks")
    # eager attention exports as plain MatMul/Softmax, the pattern ORT fuses into one Attention op
    auto = transformers.AutoModel if embedding else transformers.AutoModelForSequenceClassification
    network = auto.from_pretrained(model, local_files_only=local_files_only, attn_implementation="eager").eval()
    config = network.config
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids")
             if n in tokenizer("a", "b", return_token_type_ids=True)]

    class Head(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.network = network

        def forward(self, *inputs: Any) -> Any:
            features = dict(zip(names, inputs))
            if embedding:
                return mean_pooled(self.network(**features).last_hidden_state, features["attention_mask"])
            return pooled_logits(self.network, features)

    sample = tokenizer(["a question", "a question"], ["a passage", "a longer passage here"], padding=True,
                       return_tensors="pt", return_token_type_ids=True)
    output = "embedding" if embedding else "logits"
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".export-", dir=target.parent))  # a failed export leaves nothing
    try:
        raw = work / "raw.onnx"
        with warnings.catch_warnings():  # the TorchScript exporter is marked deprecated; it is the one ORT fuses
            warnings.simplefilter("ignore")
            torch.onnx.export(Head(), tuple(sample[n] for n in names), str(raw), input_names=names,
                              output_names=[output], opset_version=17, dynamo=False,
                              dynamic_axes={**{n: {0: "batch", 1: "tokens"} for n in names},
                                            output: {0: "batch"}})
        fused = work / onnx_file(False)
        if config.model_type in FUSABLE:
            fusions = FusionOptions("bert")
            fusions.enable_skip_layer_norm = fusions.enable_bias_skip_layer_norm = fusions.enable_bias_gelu = False
            optimizer.optimize_model(str(raw), model_type="bert", num_heads=config.num_attention_heads,
                                     hidden_size=config.hidden_size, optimization_options=fusions
                                     ).save_model_to_file(str(fused))
            raw.unlink()
        else:
            raw.rename(fused)
        if quantize:
            import onnx

            quantize_dynamic(str(fused), str(work / onnx_file(True)), weight_type=QuantType.QInt8, per_channel=True,
                             reduce_range=True, op_types_to_quantize=QUANTIZED_OPS,
                             extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
            fused.unlink()
        tokenizer.save_pretrained(work)
        config.save_pretrained(work)
        (work / MANIFEST).write_text(json.dumps({"source": model, "quantized": quantize, "inputs": names,
                                                 "file": onnx_file(quantize), "output": output}, indent=2))
        if target.exists():
            shutil.rmtree(target)
        work.rename(target)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return target


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


class OnnxCrossEncoderEvaluator(CrossEncoderEvaluator):
    """`CrossEncoderEvaluator` on ONNX Runtime. Same scores (fp32 to 1e-4; int8 within a few hundredths).

    `model` is either a directory written by `export_onnx` / `crag export-onnx`, which loads with only
    onnxruntime, tokenizers and numpy installed, or any checkpoint `CrossEncoderEvaluator` takes, exported
    on first use (torch and transformers needed then) into `export_dir` (default: a cache directory named
    by the checkpoint's path and file times). `quantize=True` (default) uses int8 weights. `num_threads`
    sets ONNX Runtime's intra-op threads (default: all cores).
    """


    def __init__(self, model: str, *, quantize: bool = True, batch_size: int = 1,
                 export_dir: str | Path | None = None, **kwargs: Any) -> None:
        if kwargs.get("device") not in (None, "cpu", "auto") or kwargs.get("dtype"):
            raise ValueError("the ONNX backend runs on the CPU in float32/int8; drop device/dtype or use "
                             "CrossEncoderEvaluator")
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
