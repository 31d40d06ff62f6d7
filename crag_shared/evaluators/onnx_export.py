"""Exporting a checkpoint to ONNX once: the graph (TorchScript exporter), fused for BERT-like models and
int8-quantized for CPUs, with its tokenizer, config and a manifest, in a directory that loads with only
onnxruntime and tokenizers. `OnnxCrossEncoderEvaluator` and `OnnxEmbeddingEvaluator` export on first use
into a cache directory; `crag export-onnx` does it ahead of time.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

from ..cache import cache_dir
from .hf import require_torch
from .pooling import mean_pooled, pooled_logits

__all__ = [
    "INSTALL_HINT", "MANIFEST", "SESSION_DISABLED_OPTIMIZERS", "default_export_dir", "export_onnx", "exported",
    "require_onnxruntime",
]

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
    """The model file name inside an export directory, by precision."""
    return "model_int8.onnx" if quantize else "model.onnx"


def require_onnxruntime() -> Any:
    """The onnxruntime module, or ImportError with the install hint."""
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


def export_onnx(model: str, target: str | Path, *, quantize: bool = True, local_files_only: bool = False,
                embedding: bool = False, int8_embeddings: bool = False) -> Path:
    """Export a sequence-classification checkpoint (with its `crag_pooling`, if any) to `target`; with
    `embedding`, a sentence encoder instead, whose graph ends in the mean-pooled, L2-normalised embedding.

    Uses torch's TorchScript exporter (opset 17), whose graphs ONNX Runtime's BERT optimizer can fuse
    (the dynamo exporter's graphs currently break its quantizer) into Attention, embedding and layer-norm
    ops, all but the slow ones named in `SESSION_DISABLED_OPTIMIZERS`; then dynamic int8 quantization of the
    weights of `QUANTIZED_OPS` when `quantize`, per channel (per tensor, a trained crag head moved scores by up
    to 1.2) and 7-bit (see `QUANTIZED_OPS`).
    """
    torch, transformers = require_torch()
    require_onnxruntime()
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

    class Head(torch.nn.Module):  # type: ignore[name-defined]  # torch loads lazily: Any to the checker
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
        _optimize(work, raw, config, quantize, int8_embeddings)
        tokenizer.save_pretrained(work)
        config.architectures = None  # an ONNX graph, no PyTorch class: no other tool may load it as one
        config.save_pretrained(work)
        # the model's name, never a local path: an export ships, the machine it came from does not
        source = Path(model).name if Path(model).exists() else model
        (work / MANIFEST).write_text(json.dumps({"source": source, "quantized": quantize, "inputs": names,
                                                 "int8_embeddings": int8_embeddings,
                                                 "file": onnx_file(quantize), "output": output}, indent=2))
        if target.exists():
            shutil.rmtree(target)
        work.rename(target)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return target


def _optimize(work: Path, raw: Path, config: Any, quantize: bool, int8_embeddings: bool = False) -> None:
    """Fuse the exported graph (BERT-like models) and quantize its weights, in `work`."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers import optimizer
    from onnxruntime.transformers.fusion_options import FusionOptions

    fused = work / onnx_file(False)
    if config.model_type in FUSABLE:
        fusions = FusionOptions("bert")
        fusions.enable_skip_layer_norm = fusions.enable_bias_skip_layer_norm = fusions.enable_bias_gelu = False
        fusions.enable_embed_layer_norm = not int8_embeddings
        optimizer.optimize_model(str(raw), model_type="bert", num_heads=config.num_attention_heads,
                                 hidden_size=config.hidden_size, optimization_options=fusions
                                 ).save_model_to_file(str(fused))
        raw.unlink()
    else:
        raw.rename(fused)
    if quantize:
        import onnx

        ops = [*QUANTIZED_OPS, "Gather"] if int8_embeddings else QUANTIZED_OPS
        quantize_dynamic(str(fused), str(work / onnx_file(True)), weight_type=QuantType.QInt8, per_channel=True,
                         reduce_range=True, op_types_to_quantize=ops,
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
        fused.unlink()
