"""`crag train-evaluator`: fine-tune a retrieval evaluator on labelled pairs, on a CPU if need be.

The paper's recipe (Appendix B and section 4.2): regression of +1/-1 labels on a sequence-classification
head (MSE), AdamW, a linear schedule. What makes it learn within a CPU budget on a sentence encoder such
as all-MiniLM ([CLS]-pooler heads stayed at AUROC ~0.55): "pair" pooling, a head that starts as the
encoder's own cosine similarity of question and passage (see `pooled_logits`), a 20x higher learning
rate for the head than for the encoder, length-grouped batches (little padding) and sequences cut at
`max_length` tokens. Validation is by query, with early stopping.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..evaluators.hf import pick_device, require_torch
from ..evaluators.pooling import pair_inputs, pooled_logits
from ..evaluators.t5 import t5_inputs
from .data import Pair, auroc

__all__ = ["TrainConfig", "TrainReport", "listwise_loss", "train_evaluator"]


@dataclass
class TrainConfig:
    """Everything `crag train-evaluator` takes: data, base model, head, loss, schedule and limits."""
    base_model: str
    out: str
    kind: Literal["bert", "t5"] = "bert"
    pooling: Literal["pair", "mean", "cls"] = "pair"
    epochs: float = 1.0
    max_steps: int | None = None
    batch_size: int = 16
    lr: float = 5e-5
    head_lr: float = 1e-3
    warmup: float = 0.1
    max_length: int = 256
    eval_every: int = 100
    eval_limit: int = 1000
    patience: int = 4
    listwise: float = 0.0
    temperature: float = 0.3
    seed: int = 0
    threads: int | None = None
    device: str = "auto"
    layers: int | None = None
    bf16: bool | None = None
    keep_best: bool = False


@dataclass
class TrainReport:
    """What training did: validation history, best step and AUROC, steps, seconds, early stop."""
    history: list[dict[str, float]] = field(default_factory=list)
    best_step: int = 0
    best_auroc: float = float("nan")
    steps: int = 0
    seconds: float = 0.0
    stopped_early: bool = False

    def to_dict(self) -> dict[str, Any]:
        """This object as JSON-ready values."""
        return asdict(self)


class _Model:
    """The evaluator being trained: loading, encoding and the forward pass, exactly as at inference."""

    def __init__(self, config: TrainConfig) -> None:
        _, transformers = require_torch()
        self.config = config
        self.device = pick_device(config.device)
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(config.base_model)
        if config.kind == "t5":
            self.model = transformers.T5ForSequenceClassification.from_pretrained(config.base_model, num_labels=1)
            if getattr(self.model.config, "decoder_start_token_id", None) is None:
                self.model.config.decoder_start_token_id = self.tokenizer.pad_token_id
            self.head = self.model.classification_head
        else:
            self.model = transformers.AutoModelForSequenceClassification.from_pretrained(config.base_model,
                                                                                          num_labels=1)
            fresh_head = getattr(self.model.config, "crag_pooling", None) is None  # else: continue training
            if config.pooling != "cls":
                self.model.config.crag_pooling = config.pooling
            if config.pooling == "pair" and fresh_head:  # start as a scaled cosine: 4·cos − 2, ~0 at cos 0.5
                torch = require_torch()[0]
                with torch.no_grad():
                    self.model.classifier.weight.fill_(4.0)
                    self.model.classifier.bias.fill_(-2.0)
            self.model.config.crag_score_map = "clip"
            self.head = self.model.classifier
        self.model.config.problem_type = "regression"
        if config.layers is not None:
            self._truncate(config.layers)
        self.model.to(self.device)
        #: bf16 autocast: on CUDA unless `bf16=False`; on a CPU only when asked (fast where it has AMX)
        self.bf16 = self.device.startswith("cuda") if config.bf16 is None else config.bf16

    def _truncate(self, layers: int) -> None:
        """Keep the encoder's first `layers` layers: a shallower copy costs that share of the time to run."""
        encoder = getattr(self.model.base_model, "encoder", None)
        stack = getattr(encoder, "layer", None)
        if encoder is None or stack is None or self.config.kind != "bert":
            raise ValueError("layers= needs a BERT-style encoder (base_model.encoder.layer)")
        if not 1 <= layers <= len(stack):
            raise ValueError(f"layers must lie in [1, {len(stack)}], got {layers}")
        encoder.layer = stack[:layers]
        self.model.config.num_hidden_layers = layers

    def encode(self, pairs: Sequence[Pair]) -> list[dict[str, list[int]]]:
        if not pairs:
            return []
        queries, passages = [p.query for p in pairs], [p.passage for p in pairs]
        if self.config.kind == "t5":
            encoded = t5_inputs(self.tokenizer, queries, passages, self.config.max_length)
        else:
            encoded = pair_inputs(self.tokenizer, queries, passages, self.config.max_length,
                                  self.config.pooling == "pair")
        keys = list(encoded.keys())
        return [{k: encoded[k][i] for k in keys} for i in range(len(pairs))]

    def logits(self, features: dict[str, Any]) -> Any:
        return pooled_logits(self.model, features)[:, 0]

    def batch(self, items: Sequence[dict[str, list[int]]]) -> dict[str, Any]:
        return {k: v.to(self.device) for k, v in self.tokenizer.pad(list(items), return_tensors="pt").items()}

    def autocast(self) -> Any:
        """bf16 autocast where `bf16` (the loss stays float32); a no-op elsewhere."""
        torch, _ = require_torch()
        return torch.autocast(self.device.split(":")[0], dtype=torch.bfloat16, enabled=self.bf16)


def _length_grouped(groups: Sequence[list[int]], lengths: Sequence[int], batch_size: int,
                    rng: random.Random) -> list[list[int]]:
    """Shuffled batches of about `batch_size` examples, similar lengths together: random order, little
    padding. Each group (one example, or one question's pairs for the listwise loss) stays in one batch."""
    order = list(groups)
    rng.shuffle(order)
    chunk = max(1, batch_size * 32 * len(groups) // max(1, len(lengths)))  # ~32 batches sorted at a time
    batches: list[list[int]] = []
    for start in range(0, len(order), chunk):
        current: list[int] = []
        for group in sorted(order[start:start + chunk], key=lambda g: sum(lengths[i] for i in g) / len(g)):
            current.extend(group)
            if len(current) >= batch_size:
                batches.append(current)
                current = []
        if current:
            batches.append(current)
    rng.shuffle(batches)
    return batches


def listwise_loss(logits: Any, targets: Sequence[float], queries: Sequence[str], temperature: float) -> Any:
    """Mean over positives of -log softmax over the positive and its question's negatives: teaches the ranking
    within a question (the answer paragraph over its article's other paragraphs) that pointwise MSE learns slowly."""
    torch, _ = require_torch()
    terms = []
    for query in dict.fromkeys(queries):
        rows = [i for i, q in enumerate(queries) if q == query]
        negatives = [i for i in rows if targets[i] < 0]
        if not negatives:
            continue
        for i in (i for i in rows if targets[i] > 0):
            candidates = logits[[i, *negatives]] / temperature
            terms.append(torch.logsumexp(candidates, 0) - candidates[0])
    return torch.stack(terms).mean() if terms else logits.sum() * 0.0


def score_pairs(model: _Model, encoded: Sequence[dict[str, list[int]]], batch_size: int = 64) -> list[float]:
    """The model's scores of encoded pairs (no gradients)."""
    torch, _ = require_torch()
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]["input_ids"]))
    scores = [0.0] * len(encoded)
    model.model.eval()
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            index = order[start:start + batch_size]
            with model.autocast():
                logits = model.logits(model.batch([encoded[i] for i in index])).float()
            for i, value in zip(index, logits.tolist()):
                scores[i] = value
    return scores


def train_evaluator(train: Sequence[Pair], validation: Sequence[Pair], config: TrainConfig, *,
                    progress: bool = True, log: Callable[[str], None] = print) -> TrainReport:
    """Fine-tune, validate every `eval_every` steps (AUROC on up to `eval_limit` validation pairs),
    stop after `patience` evaluations without improvement, and save the best model with `save_pretrained`
    (plus `training_report.json`) to `config.out`."""
    torch, _ = require_torch()
    from tqdm.auto import tqdm

    if not train:
        raise ValueError("no training pairs")
    if config.threads:
        torch.set_num_threads(config.threads)
    rng = random.Random(config.seed)
    torch.manual_seed(config.seed)
    model = _Model(config)
    train_items = model.encode(train)
    targets = [1.0 if p.relevant else -1.0 for p in train]
    queries = [p.query_id for p in train]
    held = list(validation)
    rng.shuffle(held)
    held = held[: config.eval_limit]
    held_items = model.encode(held)
    held_labels = [p.relevant for p in held]

    lengths = [len(item["input_ids"]) for item in train_items]
    groups = _groups(queries if config.listwise else list(range(len(train))))
    steps_per_epoch = -(-len(train_items) // config.batch_size)
    total = config.max_steps or max(1, int(steps_per_epoch * config.epochs))
    optimizer, schedule = _optimizer(model, config, total)

    report, best_state, bad_evals, step, started = TrainReport(), None, 0, 0, time.perf_counter()
    losses: list[float] = []
    bar = tqdm(total=total, desc="training", disable=not progress)
    while step < total and not report.stopped_early:
        for batch in _length_grouped(groups, lengths, config.batch_size, rng):
            losses.append(_train_step(model, config, [train_items[i] for i in batch], [targets[i] for i in batch],
                                      [queries[i] for i in batch], optimizer, schedule))
            step += 1
            bar.update(1)
            bar.set_postfix(loss=f"{sum(losses[-50:]) / len(losses[-50:]):.3f}")
            if step % config.eval_every == 0 or step == total:
                value = _validate(model, held_items, held_labels, report, step, total,
                                  sum(losses[-config.eval_every:]) / len(losses[-config.eval_every:]), started, log)
                if not held or math.isnan(report.best_auroc) or value > report.best_auroc:
                    report.best_auroc, report.best_step, bad_evals = value, step, 0
                    best_state = _best(model, config, report, step, started)
                else:
                    bad_evals += 1
                    if bad_evals >= config.patience:
                        report.stopped_early = True
                        break
            if step >= total:
                break
    bar.close()
    if best_state is not None:
        model.model.load_state_dict(best_state)
    report.steps, report.seconds = step, time.perf_counter() - started
    _save(model, config, report)
    return report


def _groups(keys: Sequence[object]) -> list[list[int]]:
    """Indices by key, in first-seen order: the listwise loss needs each question's pairs in one batch."""
    grouped: dict[object, list[int]] = {}
    for i, key in enumerate(keys):
        grouped.setdefault(key, []).append(i)
    return list(grouped.values())


def _best(model: _Model, config: TrainConfig, report: TrainReport, step: int, started: float) -> dict[str, Any]:
    """A copy of the model's weights, the best so far; with `keep_best`, saved too, so that an interrupted
    run still leaves its best model."""
    if config.keep_best:
        report.steps, report.seconds = step, time.perf_counter() - started
        _save(model, config, report)
    return {k: v.detach().clone() for k, v in model.model.state_dict().items()}


def _validate(model: _Model, items: list[Any], labels: list[bool], report: TrainReport, step: int, total: int,
              loss: float, started: float, log: Callable[[str], None]) -> float:
    """Validation AUROC at this step (nan without validation pairs), recorded and logged."""
    value = auroc(score_pairs(model, items), labels) if items else float("nan")
    entry = {"step": step, "loss": loss, "val_auroc": value, "seconds": time.perf_counter() - started}
    report.history.append(entry)
    log(f"step {step}/{total}: loss {loss:.4f}, validation AUROC {value:.4f}, {entry['seconds']:.0f} s")
    return value


def _optimizer(model: _Model, config: TrainConfig, total: int) -> tuple[Any, Any]:
    """AdamW with the head at its own learning rate, and a linear schedule with warm-up."""
    torch, transformers = require_torch()
    head_ids = {id(p) for p in model.head.parameters()}
    optimizer = torch.optim.AdamW([
        {"params": [p for p in model.model.parameters() if id(p) not in head_ids], "lr": config.lr},
        {"params": list(model.head.parameters()), "lr": config.head_lr},
    ], weight_decay=0.01)
    return optimizer, transformers.get_linear_schedule_with_warmup(optimizer, int(total * config.warmup), total)


def _train_step(model: _Model, config: TrainConfig, items: list[Any], targets: list[float], queries: list[Any],
                optimizer: Any, schedule: Any) -> float:
    """One optimizer step on one batch: MSE to the ±1 targets, plus the listwise loss if asked; the loss."""
    torch, _ = require_torch()
    model.model.train()
    features = model.batch(items)
    target = torch.tensor(targets, device=model.device)
    with model.autocast():
        logits = model.logits(features).float()
    loss = torch.nn.functional.mse_loss(logits, target)
    if config.listwise:
        loss = loss + config.listwise * listwise_loss(logits, targets, queries, config.temperature)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.model.parameters(), 1.0)
    optimizer.step()
    schedule.step()
    optimizer.zero_grad()
    return float(loss.item())


def _save(model: _Model, config: TrainConfig, report: TrainReport) -> None:
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    model.model.save_pretrained(str(out))
    model.tokenizer.save_pretrained(str(out))
    (out / "training_report.json").write_text(json.dumps({"config": asdict(config), **report.to_dict()}, indent=2))
