"""`crag-bench reader`: a reader export's size on disk, its latency on 10 passages of 100 words (PopQA text,
p50 and p90 over 50 questions, `threads` ONNX Runtime threads), and its judging figures (both sides on one
line: answers kept and near misses passed) on the development sets' test halves, the held-out sets and
PopQA, each through the Corrector with the export's fitted thresholds."""

from __future__ import annotations

import json
import random
import statistics
import time
from pathlib import Path
from typing import TextIO

from crag_shared.evaluators import ReaderEvaluator
from crag_shared.evaluators.onnx_export import MANIFEST

from ..judges import run as judges
from ..popqa import popqa_records


def latency(evaluator: ReaderEvaluator, bench: Path, queries: int = 50) -> tuple[float, float]:
    """(p50, p90) milliseconds to score 10 passages of 100 words for one question."""
    records = popqa_records(bench)
    words = " ".join(p.text or "" for r in records for p in r.passages[:3]).split()
    rng = random.Random(0)
    questions = [r.question for r in records][:queries]

    def passages() -> list[str]:
        return [" ".join(words[i:i + 100]) for i in (rng.randrange(len(words) - 100) for _ in range(10))]

    evaluator.evaluate(questions[0], passages())  # load and warm
    timings = []
    for question in questions:
        texts = passages()
        started = time.perf_counter()
        evaluator.evaluate(question, texts)
        timings.append((time.perf_counter() - started) * 1000)
    timings.sort()
    return statistics.median(timings), timings[int(0.9 * len(timings))]


def run(out: TextIO, bench: Path, *, model: str | None = None, threads: int = 2) -> None:
    """Print the export's size, latency and judging figures."""
    evaluator = ReaderEvaluator(model, num_threads=threads)
    directory = Path(evaluator.model_name)
    size = sum(f.stat().st_size for f in directory.iterdir() if f.is_file() and f.name != MANIFEST)
    p50, p90 = latency(evaluator, bench)
    upper, lower = evaluator.thresholds
    out.write(f"reader {directory}: {size / 1e6:.1f} MB on disk; 10 passages of 100 words: p50 {p50:.0f} ms, "
              f"p90 {p90:.0f} ms ({threads} threads); thresholds {upper:+.2f}/{lower:+.2f}\n")
    specs = ["reader" if model is None else f"reader:{model}", blend_of(directory) if model else "default"]
    judges(out, None, evaluators=specs, names=["docs", "facts", "domains"], halves=["test"])
    judges(out, None, evaluators=specs, names=[f"heldout-{n}" for n in ("docs", "facts", "domains", "patients",
                                                                         "products")], halves=["test"])
    judges(out, None, evaluators=specs, names=["blindspots-test"], halves=["test"])
    judges(out, bench, evaluators=specs, names=["popqa"], halves=["tune", "test"])


def blend_of(export: Path) -> str:
    """The spec of the default judge as it would be with `export` shipped: the blend `fit_export` fitted beside
    it (`reader-lexical.json`), its reader member pointed at the export."""
    fitted = export.parent / "reader-lexical.json"
    if not fitted.is_file():
        raise SystemExit(f"{fitted}: no blend fitted beside the export (crag-bench train-reader writes it)")
    candidate = export.parent / "reader-lexical-candidate.json"
    candidate.write_text(json.dumps(json.loads(fitted.read_text()) | {"members": [f"reader:{export}", "lexical"]},
                                    indent=2) + "\n", encoding="utf-8")
    return f"combined:{candidate}"
