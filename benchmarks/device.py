"""`crag-bench throughput --device cuda`: the GPU rows, each path against the paper-style one, same run.

Rows per model: the paper's way (one pair per forward pass, padded to 512, float32), crag's defaults on
the device (one batch per query, lengths bucketed), and crag in bf16, whose first pass over new shapes pays
kernel selection unless `warm_buckets` paid it at load, so both the first and a warm pass are timed.
Speed only: the models may be random (T5-large-sized here is, the paper's evaluator size).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from crag_shared.cache import cache_dir
from crag_shared.evaluators.cross_encoder import CrossEncoderEvaluator
from crag_shared.evaluators.hf import HFSequenceEvaluator, pick_device
from crag_shared.evaluators.t5 import T5Evaluator

from .throughput import decision_latency, load_popqa, minilm_dir, official_pairs_per_second, pass_rate

Make = Callable[..., HFSequenceEvaluator]


def t5_large_dir(texts: Sequence[str]) -> Path:
    """A T5-large-sized T5ForSequenceClassification with random weights (the paper's evaluator size)."""
    from crag_shared.testing import build_t5_evaluator

    target = cache_dir("t5-large-random")
    if not (target / "config.json").exists():
        build_t5_evaluator(target, texts, d_model=1024, layers=24, heads=16, d_ff=4096)
    return target


def device_rows(out: TextIO, data: Sequence[tuple[str, list[str]]], device: str,
                models: Mapping[str, tuple[Make, str]], *, baseline_queries: int = 6, rounds: int = 2,
                fast_dtype: str | None = None) -> dict[str, Any]:
    """For each model: paper-style, crag defaults and crag `fast_dtype` (first and warm pass, with and
    without `warm_buckets`) pairs/s, the speedups, and the decision latency with the fastest setting."""
    results: dict[str, Any] = {}
    dtype = {"dtype": fast_dtype} if fast_dtype else {}
    for name, (make, path) in models.items():
        paper = official_pairs_per_second(make(path, device=device), data[:baseline_queries])
        defaults = make(path, device=device)
        defaults.score(*data[0])
        default_rate = max(pass_rate(defaults, data) for _ in range(rounds))
        cold = make(path, device=device, **dtype)
        cold.warm_up()
        cold_first = pass_rate(cold, data)
        cold_warm = max(pass_rate(cold, data) for _ in range(rounds))
        warmed = make(path, device=device, warm_buckets=True, **dtype)
        started = time.perf_counter()
        warmed.warm_up()
        warm_up_s = time.perf_counter() - started
        warmed_first = pass_rate(warmed, data)
        latency = decision_latency(warmed, data, rounds)
        results[name] = row = {
            "paper_pairs_per_s": paper, "defaults_pairs_per_s": default_rate, "fast_first_pairs_per_s": cold_first,
            "fast_warm_pairs_per_s": cold_warm, "warmed_first_pairs_per_s": warmed_first, "warm_up_s": warm_up_s,
            "defaults_speedup": default_rate / paper, "fast_speedup": cold_warm / paper,
            "first_pass_slowdown": cold_warm / warmed_first, "batching": list(warmed.batching), **latency}
        label = fast_dtype or "float32"
        out.write(f"  {name} on {device}:\n"
                  f"    paper-style (1 pair/pass, padded to 512, float32): {paper:7.1f} pairs/s\n"
                  f"    crag defaults (batching {tuple(defaults.batching)}):     {default_rate:7.1f} pairs/s = "
                  f"{row['defaults_speedup']:.1f}x\n"
                  f"    crag {label}, warm pass:                          {cold_warm:7.1f} pairs/s = "
                  f"{row['fast_speedup']:.1f}x (its first pass, shapes new: {cold_first:.1f})\n"
                  f"    crag {label}, warm_buckets=True, first pass:      {warmed_first:7.1f} pairs/s "
                  f"(warm pass / this = {row['first_pass_slowdown']:.2f}; warm-up took {warm_up_s:.1f} s)\n"
                  f"    decision latency p50 {latency['p50_ms']:.0f} ms, p95 {latency['p95_ms']:.0f} ms\n")
    return results


def run(out: TextIO, bench: Path, device: str, *, queries: int = 20, baseline_queries: int = 6,
        rounds: int = 2) -> dict[str, Any]:
    """The GPU rows of the README (MiniLM-L6 cross-encoder, T5-large-sized) on `device`."""
    device = pick_device(device)
    data = load_popqa(bench, queries)
    texts = [q for q, _ in data] + [p for _, ps in data for p in ps]
    models = {"MiniLM-L6 cross-encoder": (CrossEncoderEvaluator, str(minilm_dir())),
              "T5-large-sized (random)": (T5Evaluator, str(t5_large_dir(texts)))}
    import torch

    name = torch.cuda.get_device_name(0) if device.startswith("cuda") else device
    out.write(f"crag-bench throughput --device {device} ({name}): PopQA, {queries} queries x 10 passages; "
              f"speed only (random heads)\n")
    return device_rows(out, data, device, models, baseline_queries=baseline_queries, rounds=rounds,
                       fast_dtype="bfloat16" if device != "cpu" else None)
