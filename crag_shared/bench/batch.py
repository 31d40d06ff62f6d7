"""`crag bench batch`: `Corrector.correct_many` against the per-query loop, on PopQA, within one run."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TextIO

from ..config import CRAGConfig
from ..refine import sentence_spans
from .throughput import load_popqa


def run(out: TextIO, bench: Path, evaluator: str, *, queries: int = 100, batch_size: int = 32,
        rounds: int = 3) -> dict[str, float]:
    """Queries/s of the loop and of correct_many (best of `rounds`, interleaved, cold sentence cache each
    time), and whether both gave the same actions and knowledge."""
    data = load_popqa(bench, queries)
    corrector = CRAGConfig(evaluator=evaluator).build()
    corrector.correct(*data[0])  # load the model outside the timings
    loop_s, many_s, same = [], [], True
    for _ in range(rounds):
        sentence_spans.cache_clear()
        started = time.perf_counter()
        alone = [corrector.correct(q, p) for q, p in data]
        loop_s.append(time.perf_counter() - started)
        sentence_spans.cache_clear()
        started = time.perf_counter()
        together = [r for s in range(0, len(data), batch_size)
                    for r in corrector.correct_many(data[s:s + batch_size])]
        many_s.append(time.perf_counter() - started)
        same &= all(a.action == b.action and [x.text for x in a.knowledge] == [x.text for x in b.knowledge]
                    for a, b in zip(alone, together))
    figures = {"queries": len(data), "loop_qps": len(data) / min(loop_s), "many_qps": len(data) / min(many_s)}
    figures["speedup"] = figures["many_qps"] / figures["loop_qps"]
    out.write(f"crag bench batch: {evaluator}, {len(data)} PopQA queries x 10 passages, no web, best of {rounds}\n"
              f"  per-query loop {figures['loop_qps']:.1f} queries/s | correct_many (batches of {batch_size}) "
              f"{figures['many_qps']:.1f} queries/s | {figures['speedup']:.2f}x | same decisions: {same}\n")
    figures["same"] = float(same)
    return figures
