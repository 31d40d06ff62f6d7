"""`crag-bench batch`: `Corrector.correct_many` against the per-query loop, and the Ray engine against the
local one, on PopQA, within one run."""

from __future__ import annotations

import json
import tempfile
import time
from contextlib import ExitStack
from importlib.util import find_spec
from pathlib import Path
from typing import TextIO

from crag_shared.config import CRAGConfig
from crag_shared.corrector import Corrector
from crag_shared.evaluators import evaluator_from_spec, evaluator_spec
from crag_shared.testing import FakeWeb
from crag_shared.text.sentences import sentence_spans
from crag_shared.tools.batch import run as run_locally
from crag_shared.types import CorrectionResult

from .popqa import TOP_K, popqa_records
from .recall import load as load_recorded
from .recall import serve_recorded
from .throughput import load_popqa


def run(out: TextIO, bench: Path, evaluator: str, *, queries: int = 100, batch_size: int = 32,
        rounds: int = 3, engines: bool = False, copies: int = 1, web_delay: float | None = None,
        upper: float | None = None, lower: float | None = None) -> dict[str, float]:
    """Queries/s of the loop and of correct_many (best of `rounds`, interleaved, cold sentence and embedding
    caches each time), and whether both gave the same actions and knowledge; with `engines`, `compare_engines` too.
    With `web_delay`, queries that need the web search the recorded PopQA web knowledge on loopback
    (`crag-bench recall`'s server), the search and each page answering after `web_delay` seconds.
    `upper`/`lower` replace the evaluator's thresholds (e.g. to send more queries to the web)."""
    config = CRAGConfig(evaluator=evaluator, upper=upper, lower=lower)
    with ExitStack() as stack:
        search = None
        if web_delay is not None:
            web = stack.enter_context(FakeWeb(search_delay=web_delay))
            search = serve_recorded(web, load_recorded(bench, queries), delay=web_delay)
        figures = _loop_against_many(out, load_popqa(bench, queries), Corrector.from_config(config, web_search=search),
                                     batch_size=batch_size, rounds=rounds, web_delay=web_delay)
    if engines:
        figures.update(compare_engines(out, bench, config, queries=queries, batch_size=batch_size, copies=copies,
                                       rounds=rounds))
        figures["same"] = float(figures["same"] and figures["identical_knowledge"])
    return figures


def _loop_against_many(out: TextIO, data: list[tuple[str, list[str]]], corrector: Corrector, *, batch_size: int,
                       rounds: int, web_delay: float | None) -> dict[str, float]:
    corrector.correct(*data[0])  # load the model outside the timings
    loop_s, many_s, same = [], [], True
    for _ in range(rounds):
        _cold(corrector)
        started = time.perf_counter()
        alone = [corrector.correct(q, p) for q, p in data]
        loop_s.append(time.perf_counter() - started)
        _cold(corrector)
        started = time.perf_counter()
        together = [r for s in range(0, len(data), batch_size)
                    for r in corrector.correct_many(data[s:s + batch_size])]
        many_s.append(time.perf_counter() - started)
        same &= all(isinstance(a, CorrectionResult) and isinstance(b, CorrectionResult) and a.action == b.action
                    and [x.text for x in a.knowledge] == [x.text for x in b.knowledge] for a, b in zip(alone, together))
    searched = sum(r.action.value != "correct" for r in alone) if web_delay is not None else 0
    figures = {"queries": len(data), "loop_qps": len(data) / min(loop_s), "many_qps": len(data) / min(many_s),
               "searched": searched, "same": float(same)}
    figures["speedup"] = figures["many_qps"] / figures["loop_qps"]
    web = ("no web" if web_delay is None else f"web on loopback answering in {web_delay * 1000:.0f} ms "
           f"({searched} queries searched)")
    spec = evaluator_spec(corrector.evaluator)
    out.write(f"crag-bench batch: {spec}, {len(data)} PopQA queries x 10 passages, {web}, "
              f"best of {rounds}\n  per-query loop {figures['loop_qps']:.1f} queries/s | correct_many (batches of "
              f"{batch_size}) {figures['many_qps']:.1f} queries/s | {figures['speedup']:.2f}x | same decisions: "
              f"{same}\n")
    return figures


def _cold(corrector: Corrector) -> None:
    """Empty the sentence and embedding caches, so that no pass reuses the texts of the pass before."""
    sentence_spans.cache_clear()
    corrector.evaluator.clear_cache()


def compare_engines(out: TextIO, bench: Path, config: CRAGConfig, *, queries: int, batch_size: int,
                    copies: int = 1, rounds: int = 1) -> dict[str, float]:
    """`crag run`'s local engine against `--engine ray` on a local cluster over the same records (PopQA,
    `copies` times under new ids), each from a cold start as a user runs it: the local engine loads its
    evaluator, Ray starts its actor (the cluster's start is timed apart, once), and both write their JSONL.
    Best of `rounds`, interleaved."""
    if find_spec("ray") is None:
        raise SystemExit("the engine comparison needs Ray Data: pip install 'crag-shared[ray]'")
    from crag_shared.tools.batch_ray import connect, run_on_ray

    rows = popqa_records(bench, queries)
    with tempfile.TemporaryDirectory(prefix="crag-bench-engines-") as work:
        data, local_out, ray_out = Path(work, "in.jsonl"), Path(work, "local.jsonl"), Path(work, "ray.jsonl")
        data.write_text("".join(json.dumps({"id": f"{copy}-{r.key}", "question": r.question, "ctxs": [
            {"id": p.id, "title": p.title, "text": p.text} for p in r.passages[:TOP_K]]}) + "\n"
            for copy in range(copies) for r in rows))
        started = time.perf_counter()
        connect()
        cluster_s = time.perf_counter() - started
        local_times, ray_times = [], []
        for _ in range(rounds):
            for path in (local_out, ray_out):
                path.unlink(missing_ok=True)
            sentence_spans.cache_clear()
            started = time.perf_counter()
            run_locally(Corrector.from_config(config, evaluator=evaluator_from_spec(config.evaluator)), data, local_out,
                        batch_size=batch_size, progress=False)
            local_times.append(time.perf_counter() - started)
            started = time.perf_counter()
            run_on_ray(config, data, ray_out, batch_size=batch_size, progress=False)
            ray_times.append(time.perf_counter() - started)
        local_s, ray_s = min(local_times), min(ray_times)
        knowledge = [[json.loads(line)["strips"] for line in path.open(encoding="utf-8")]
                     for path in (local_out, ray_out)]
    figures = {"engine_queries": float(len(rows) * copies), "local_s": local_s, "ray_cluster_s": cluster_s,
               "ray_s": ray_s, "ray_ratio": ray_s / local_s, "identical_knowledge": float(knowledge[0] == knowledge[1])}
    out.write(f"  crag run engines over {len(rows) * copies} queries (batches of {batch_size}): local {local_s:.1f} s "
              f"(evaluator load included) | ray {ray_s:.1f} s (actor start and load included) = "
              f"{figures['ray_ratio']:.2f}x, plus {cluster_s:.1f} s to start the local cluster | identical "
              f"knowledge: {knowledge[0] == knowledge[1]}\n")
    return figures
