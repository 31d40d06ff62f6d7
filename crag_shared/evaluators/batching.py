"""Batched pair scoring that any backend shares (torch, ONNX Runtime): tokenize once, sort by length, pad per batch.

One query's texts are tokenized once, sorted by token length, and scored in dynamically padded batches,
instead of one 512-token-padded pair per forward pass as in the paper's code. Batches are bounded by a
padded-token budget as well as a count: retrieved passages vary from a dozen to hundreds of tokens, and on
a CPU padding the short ones to the longest costs more than batching saves. On a GPU the trade reverses (a
forward pass costs about the same for 1 or 100 short pairs), so the defaults depend on the device
(`DEVICE_BATCHING`): a query's pairs go in one batch, and padded lengths round up to a bucket so that
shapes repeat, which matters in bf16/fp16 where every new shape pays a one-time kernel selection
(`warm_buckets=True` pays it at warm-up instead). Int8 (`quantize=True`) scores each text alone unless
`batch_size` is given: dynamic quantization scales a whole batch's activations with one factor, so in a
batch a text's score would move with its neighbours.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any, Protocol

from ..scores import clip
from ..text.words import encodable
from .base import Evaluation, EvaluatorConfigurationError, RetrievalEvaluator

__all__ = ["DEVICE_BATCHING", "BatchedPairEvaluator", "load_once"]

#: (texts per batch, padded tokens per batch, length bucket) by device kind, for settings left as None.
#: CPU: small, exactly padded batches (padding is paid in compute). GPU (CUDA/MPS): room for many
#: queries' pairs per batch, lengths rounded up to a multiple of 16 so padded shapes repeat.
DEVICE_BATCHING = {"cpu": (16, 512, 1), "gpu": (256, 32768, 16)}

#: Characters kept per text before tokenizing: far more than `max_length` tokens in any script, so
#: truncation happens in the tokenizer, but a 1 MB passage is never tokenized whole.
CHARS_PER_TOKEN_CAP = 8


class Loadable(Protocol):
    """What `load_once` needs of an evaluator: its model's name, its model slot, a lock and the loader."""

    _model: Any
    _lock: threading.RLock

    @property
    def model_name(self) -> str | None:
        """The checkpoint's path or hub id (None: a model the application passed)."""
        ...

    def _load(self) -> None: ...


def load_once(evaluator: Loadable) -> None:
    """Run `evaluator._load()` once, thread-safely (`_model`, `_lock`); any failure is a configuration error."""
    if evaluator._model is not None:
        return
    with evaluator._lock:
        if evaluator._model is None:
            try:
                evaluator._load()
            except EvaluatorConfigurationError:
                raise
            except Exception as error:  # a runtime's own errors too (ONNX Runtime, tokenizers): a model that
                # cannot load cannot score any query, so it is the configuration's fault, not one query's
                raise EvaluatorConfigurationError(f"cannot use evaluator {type(evaluator).__name__}"
                                                  f"({evaluator.model_name!r}): {type(error).__name__}: "
                                                  f"{error}") from error


class BatchedPairEvaluator(RetrievalEvaluator):
    """Base for evaluators that score tokenized (query, text) pairs in padded batches, on any backend.

    A backend says how it loads (`_load`, setting `_model`, `_tokenizer` and `device`), how a pair becomes
    token ids (`_encode`), how one padded batch becomes logits (`_batch_logits`) and how logits become
    scores (`_to_scores`). Models load on first use (or `warm_up`).
    """

    def __init__(
        self,
        model: str,
        *,
        max_length: int = 512,
        batch_size: int | None = None,
        max_batch_tokens: int | None = None,
        length_bucket: int | None = None,
        warm_buckets: bool = False,
        quantize: bool = False,
        num_threads: int | None = None,
        thresholds: tuple[float, float] | None = None,
        local_files_only: bool = False,
    ) -> None:
        if max_length < 8:
            raise ValueError(f"max_length must be at least 8, got {max_length}")
        for name, value in (("batch_size", batch_size), ("max_batch_tokens", max_batch_tokens),
                            ("length_bucket", length_bucket)):
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ValueError(f"{name} must be a positive integer or None (device default), got {value!r}")
        self.model_name = str(model)
        self.max_length = max_length
        self.batch_size = batch_size
        self.max_batch_tokens = max_batch_tokens
        self.length_bucket = length_bucket
        self.warm_buckets = warm_buckets
        self.quantize = quantize
        self._resolve_batching("cpu")  # until the model loads on its device
        self._warmed = False
        self.device: str | None = "cpu"
        self.num_threads = num_threads
        self.local_files_only = local_files_only
        self._thresholds = tuple(thresholds) if thresholds is not None else None
        self._model: Any = None
        self._tokenizer: Any = None
        self._lock = threading.RLock()

    @property
    def model(self) -> Any:
        """The loaded model (loaded on first use)."""
        self.warm_up()
        return self._model

    @property
    def tokenizer(self) -> Any:
        """The loaded tokenizer (loaded on first use)."""
        self.warm_up()
        return self._tokenizer

    def warm_up(self) -> None:
        """Load the model (and, with `warm_buckets`, run each bucketed shape once); a model that cannot
        load, or has no trained head, raises `EvaluatorConfigurationError`, which the Corrector never turns
        into a fallback."""
        if self._model is not None and self._warmed:
            return
        load_once(self)
        with self._lock:  # reentrant: warming scores through the same accessors
            if not self._warmed:
                self._resolve_batching(str(self.device))
                self._warmed = True
                if self.warm_buckets:
                    self._warm_buckets()

    @property
    def batching(self) -> tuple[int, int, int]:
        """(texts per batch, padded tokens per batch, length bucket) in effect: the settings given, the
        rest from `DEVICE_BATCHING` for the device the model loaded on."""
        self.warm_up()
        return self._limits

    def _resolve_batching(self, device: str) -> None:
        defaults = DEVICE_BATCHING["cpu" if device.startswith("cpu") else "gpu"]
        if self.quantize:  # int8 scales a batch's activations together: only a text alone is batch-independent
            defaults = (1, *defaults[1:])
        given = (self.batch_size, self.max_batch_tokens, self.length_bucket)
        texts, tokens, bucket = (d if g is None else g for g, d in zip(given, defaults))
        self._limits = (texts, tokens, bucket)

    def bucket_widths(self) -> list[int]:
        """Every padded length a batch can have: multiples of the length bucket, up to `max_length`."""
        bucket = self._limits[2]
        return sorted({min(width, self.max_length) for width in range(bucket, self.max_length + bucket, bucket)})

    def _rows(self, count: int) -> int:
        """How many rows a batch of `count` texts runs as: with length buckets, the next power of two (at
        most the batch size), so the rows of a shape repeat too; otherwise `count`."""
        texts, _, bucket = self._limits
        return count if bucket == 1 else min(1 << (count - 1).bit_length(), max(count, texts))

    def _warm_buckets(self) -> None:
        """One forward pass per (rows, width) shape that scoring will use: rows as `_rows` rounds them,
        widths from `bucket_widths` within the token budget."""
        texts, budget, _ = self._limits
        rows = sorted({self._rows(n) for n in (2 ** i for i in range(texts.bit_length()))} | {texts})
        # a real pair, cut to each width keeping its final special token (T5 needs its </s> in every row)
        sample = {key: values[0] for key, values in self._encode("warm up", ["up " * self.max_length]).items()}
        for width in self.bucket_widths():
            row = {key: values[:width - 1] + values[-1:] for key, values in sample.items()}
            for count in (r for r in rows if r * width <= budget or r == 1):
                self._batch_logits({key: [values] * count for key, values in row.items()})

    def _load(self) -> None:
        """Load the model and tokenizer into `_model` and `_tokenizer`, and set `device`."""
        raise NotImplementedError

    def _encode(self, query: str, texts: Sequence[str]) -> dict[str, list]:
        """Tokenize all pairs once, unpadded; padding happens per batch."""
        raise NotImplementedError

    def _batch_logits(self, batch: dict[str, list]) -> Any:
        """Logits of one batch of unpadded encodings, as a float numpy array."""
        raise NotImplementedError

    def _to_scores(self, logits: Any) -> Any:
        """Scores from a (batch, labels) numpy array of logits (numpy, so every backend shares the map)."""
        raise NotImplementedError

    def _padded(self, length: int) -> int:
        """The length a text of `length` tokens is padded to: the next bucket (never below the text)."""
        bucket = self._limits[2]
        return max(length, min(-(-length // bucket) * bucket, self.max_length))

    def _batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """Indices sorted by length, cut so a batch has at most `batch_size` texts and at most
        `max_batch_tokens` tokens once padded to its longest text's bucket (a single long text still forms
        a batch)."""
        texts, budget, _ = self._limits
        batches: list[list[int]] = []
        for i in sorted(range(len(lengths)), key=lengths.__getitem__):
            grown = len(batches[-1]) + 1 if batches else 0
            if batches and grown <= texts and self._rows(grown) * self._padded(lengths[i]) <= budget:
                batches[-1].append(i)
            else:
                batches.append([i])
        return batches

    def evaluate(self, query: str, texts: Sequence[str]) -> Evaluation:
        """Score (query, text) pairs in length-sorted, dynamically padded batches; each score is batch-independent."""
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
            for key, values in self._encode(encodable(query[:cap]), [encodable(t[:cap]) for t in texts]).items():
                encoded.setdefault(key, []).extend(values)
            owners.extend((r, i) for i in range(len(texts)))
        scores = [[0.0] * len(texts) for _, texts in requests]
        for batch in self._batches([len(ids) for ids in encoded["input_ids"]]):
            rows = batch + batch[-1:] * (self._rows(len(batch)) - len(batch))  # repeated rows are dropped
            logits = self._batch_logits({k: [v[i] for i in rows] for k, v in encoded.items()})
            values = self._to_scores(logits).tolist()
            # a row with an overflowed logit has no score, whatever the map makes of it (tanh(inf / 2) is 1.0)
            finite = [all(map(math.isfinite, row)) for row in logits.reshape(len(logits), -1).tolist()]
            for i, value, usable in zip(batch, values, finite):
                r, j = owners[i]
                scores[r][j] = clip(value) if usable else math.nan
        return [Evaluation(row) for row in scores]

