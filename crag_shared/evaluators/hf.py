"""Batched scoring with Hugging Face sequence-classification models (shared by T5 and cross-encoders).

One query's texts are tokenized once, sorted by token length, and scored in dynamically padded batches
under `torch.inference_mode`, instead of one 512-token-padded pair per forward pass as in the paper's code.
Batches are bounded by a padded-token budget as well as a count: retrieved passages vary from a dozen to
hundreds of tokens, and on a CPU padding the short ones to the longest costs more than batching saves.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Sequence
from typing import Any

from .base import Evaluation, EvaluatorConfigurationError, RetrievalEvaluator

INSTALL_HINT = "this evaluator needs torch and transformers: pip install 'crag-shared[torch]'"

#: Characters kept per text before tokenizing: far more than `max_length` tokens in any script, so
#: truncation happens in the tokenizer, but a 1 MB passage is never tokenized whole.
CHARS_PER_TOKEN_CAP = 8


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


def load_once(evaluator: Any) -> None:
    """Run `evaluator._load()` once, thread-safely (`_model`, `_lock`); a failure is a configuration error."""
    if evaluator._model is not None:
        return
    with evaluator._lock:
        if evaluator._model is None:
            try:
                evaluator._load()
            except (OSError, ValueError) as error:
                raise EvaluatorConfigurationError(f"cannot use evaluator {evaluator.spec}: {error}") from error


class HFSequenceEvaluator(RetrievalEvaluator):
    """Base for evaluators backed by `AutoModelForSequenceClassification`-style checkpoints.

    Subclasses say how a (query, text) pair becomes model input and how logits become scores.
    """

    spec_prefix = "hf"

    def __init__(
        self,
        model: str,
        *,
        max_length: int = 512,
        batch_size: int = 16,
        max_batch_tokens: int = 512,
        device: str | None = None,
        dtype: str | None = None,
        quantize: bool = False,
        num_threads: int | None = None,
        thresholds: tuple[float, float] | None = None,
        local_files_only: bool = False,
        allow_untrained_head: bool = False,
    ) -> None:
        if max_length < 8:
            raise ValueError(f"max_length must be at least 8, got {max_length}")
        if batch_size < 1 or max_batch_tokens < 1:
            raise ValueError(f"batch_size and max_batch_tokens must be positive, got {batch_size}, {max_batch_tokens}")
        self.model_name = str(model)
        self.max_length = max_length
        self.batch_size = batch_size
        self.max_batch_tokens = max_batch_tokens
        self.device = device
        self.dtype = dtype
        self.quantize = quantize
        self.num_threads = num_threads
        self.local_files_only = local_files_only
        self.allow_untrained_head = allow_untrained_head
        self._thresholds = tuple(thresholds) if thresholds is not None else None
        self._model: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    @property
    def spec(self) -> str:
        return f"{self.spec_prefix}:{self.model_name}"

    @property
    def model(self) -> Any:
        self.warm_up()
        return self._model

    @property
    def tokenizer(self) -> Any:
        self.warm_up()
        return self._tokenizer

    def warm_up(self) -> None:
        """Load the model; a model that cannot load, or has no trained head, raises
        `EvaluatorConfigurationError`, which the Corrector never turns into a fallback."""
        load_once(self)

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
            # more, at the same speed (figures in the README's Benchmarks)
            with warnings.catch_warnings():  # torch marks eager quantization deprecated; it still works
                warnings.simplefilter("ignore")
                per_channel = torch.ao.quantization.per_channel_dynamic_qconfig
                model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear: per_channel}, dtype=torch.qint8)
        self._tokenizer = tokenizer
        self._model = model.to(self.device)

    def _model_class(self, transformers: Any) -> Any:
        return transformers.AutoModelForSequenceClassification

    def _encode(self, query: str, texts: Sequence[str]) -> dict[str, list]:
        """Tokenize all pairs once, unpadded; padding happens per batch."""
        raise NotImplementedError

    def _to_scores(self, logits: Any) -> Any:
        """Scores from a (batch, labels) numpy array of logits (numpy, so every backend shares the map)."""
        raise NotImplementedError

    def _batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """Indices sorted by length, cut so a batch has at most `batch_size` texts and at most
        `max_batch_tokens` tokens once padded to its longest text (a single long text still forms a batch)."""
        batches: list[list[int]] = []
        for i in sorted(range(len(lengths)), key=lengths.__getitem__):
            if batches and len(batches[-1]) < self.batch_size and \
                    (len(batches[-1]) + 1) * lengths[i] <= self.max_batch_tokens:
                batches[-1].append(i)
            else:
                batches.append([i])
        return batches

    def _logits(self, features: dict[str, Any]) -> Any:
        return self._model(**features).logits

    def _batch_logits(self, batch: dict[str, list]) -> Any:
        """Logits of one batch of unpadded encodings, as a float numpy array."""
        torch, _ = require_torch()
        features = self._tokenizer.pad(batch, return_tensors="pt")
        features = {k: v.to(self.device) for k, v in features.items()}
        with torch.inference_mode():
            return self._logits(features).float().cpu().numpy()

    def evaluate(self, query: str, texts: Sequence[str]) -> Evaluation:
        return self.evaluate_batch([(query, texts)])[0]

    def evaluate_batch(self, requests: Sequence[tuple[str, Sequence[str]]]) -> list[Evaluation]:
        """Every pair of every request tokenized once, then length-sorted batches across requests."""
        if not any(texts for _, texts in requests):
            return [Evaluation([]) for _ in requests]
        self.warm_up()
        cap = self.max_length * CHARS_PER_TOKEN_CAP
        encoded: dict[str, list] = {}
        owners: list[tuple[int, int]] = []
        for r, (query, texts) in enumerate(requests):
            if not texts:
                continue
            for key, values in self._encode(query[:cap], [t[:cap] for t in texts]).items():
                encoded.setdefault(key, []).extend(values)
            owners.extend((r, i) for i in range(len(texts)))
        scores = [[0.0] * len(texts) for _, texts in requests]
        for batch in self._batches([len(ids) for ids in encoded["input_ids"]]):
            values = self._to_scores(self._batch_logits({k: [v[i] for i in batch] for k, v in encoded.items()}))
            for i, value in zip(batch, values.tolist()):
                r, j = owners[i]
                scores[r][j] = max(-1.0, min(1.0, float(value)))
        return [Evaluation(row) for row in scores]
