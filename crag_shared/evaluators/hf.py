"""Hugging Face sequence-classification models on torch (shared by T5 and cross-encoders).

The batching (length-sorted, dynamically padded, device-dependent defaults) is `BatchedPairEvaluator`'s;
this module adds what torch needs: device choice, dtype, int8 dynamic quantization and the forward pass
under `torch.inference_mode`.
"""

from __future__ import annotations

import warnings
from typing import Any

from .batching import DEVICE_BATCHING, BatchedPairEvaluator, load_once

__all__ = ["DEVICE_BATCHING", "HFSequenceEvaluator", "load_once", "pick_device", "require_torch"]

INSTALL_HINT = "this evaluator needs torch and transformers: pip install 'crag-shared[torch]'"


def require_torch() -> tuple[Any, Any]:
    """Import torch and transformers lazily, with an install hint instead of a bare ImportError."""
    try:
        import torch
        import transformers
    except ImportError as error:  # pragma: no cover - exercised only without the extra
        raise ImportError(INSTALL_HINT) from error
    return torch, transformers


def pick_device(device: str | None) -> str:
    """None/"auto": CUDA, else MPS, else CPU. An explicit device that this machine lacks is an error, not a
    silent CPU run."""
    torch, _ = require_torch()
    mps = getattr(torch.backends, "mps", None)
    if device not in (None, "auto"):
        if str(device).startswith("cuda") and not torch.cuda.is_available():
            raise ValueError(f"device {device!r} asked for, but torch sees no CUDA GPU (use 'auto' or 'cpu')")
        if device == "mps" and not (mps and mps.is_available()):
            raise ValueError("device 'mps' asked for, but MPS is not available (use 'auto' or 'cpu')")
        return device
    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


class HFSequenceEvaluator(BatchedPairEvaluator):
    """Base for evaluators backed by `AutoModelForSequenceClassification`-style checkpoints on torch.

    Subclasses say how a (query, text) pair becomes model input and how logits become scores.
    `num_threads`, when given, sets torch's intra-op thread count, which torch keeps for the whole
    process: leave it None inside an application that tunes torch itself.
    """

    def __init__(self, model: str, *, device: str | None = None, dtype: str | None = None,
                 allow_untrained_head: bool = False, **batching: Any) -> None:
        super().__init__(model, **batching)
        self._device = device  # as asked ("auto", None...); `device` becomes the one the model loads on
        self.device = device
        self.dtype = dtype
        self.allow_untrained_head = allow_untrained_head

    def _load(self) -> None:
        torch, transformers = require_torch()
        if self.num_threads:
            torch.set_num_threads(self.num_threads)
        self.device = pick_device(self.device)
        kwargs: dict[str, Any] = {"local_files_only": self.local_files_only}
        if self.dtype:
            kwargs["dtype"] = getattr(torch, self.dtype) if isinstance(self.dtype, str) else self.dtype
        tokenizer = transformers.AutoTokenizer.from_pretrained(self.model_name, local_files_only=self.local_files_only)
        model, loading = self._model_class(transformers).from_pretrained(self.model_name, output_loading_info=True,
                                                                         **kwargs)
        untrained = [key for key in loading.get("missing_keys", ()) if "." in key]
        if untrained and not self.allow_untrained_head:
            raise ValueError(f"{self.model_name} has no trained scoring head ({len(untrained)} weights freshly "
                             f"initialised, e.g. {sorted(untrained)[0]}): it is not a relevance model, and its "
                             "scores would be noise. Fine-tune it with `crag train-evaluator`, or pass "
                             "allow_untrained_head=True to use it anyway")
        model.eval()
        if self.quantize:
            if self.device != "cpu":
                raise ValueError("quantize=True is int8 dynamic quantization for CPU; use device='cpu'")
            # per output channel: one scale per tensor moves a trained evaluator's scores several times
            # more, at the same speed (docs: Benchmarks)
            with warnings.catch_warnings():  # torch marks eager quantization deprecated; it still works
                warnings.simplefilter("ignore")
                per_channel = torch.ao.quantization.per_channel_dynamic_qconfig
                model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear: per_channel}, dtype=torch.qint8)
        self._tokenizer = tokenizer
        self._model = model.to(self.device)

    def _model_class(self, transformers: Any) -> Any:
        return transformers.AutoModelForSequenceClassification

    def _logits(self, features: dict[str, Any]) -> Any:
        return self._model(**features).logits

    def _batch_logits(self, batch: dict[str, list]) -> Any:
        torch, _ = require_torch()
        width = self._padded(max(len(ids) for ids in batch["input_ids"]))
        features = self._tokenizer.pad(batch, padding="max_length", max_length=width, return_tensors="pt")
        features = {k: v.to(self.device) for k, v in features.items()}
        with torch.inference_mode():
            return self._logits(features).float().cpu().numpy()
