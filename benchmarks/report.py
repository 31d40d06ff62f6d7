"""`crag-bench report`: the size, build time and opening time of `crag report` for a large run.

The run is the demo corrector's real results on the PopQA questions' own top-10 passages and on the demo
questions (web search replayed, so the traces hold web steps and fallbacks), repeated with shifted scores
and fresh ids up to the number of queries asked for; the page is opened in headless Chromium (Debian's
package) through Playwright, and timed to its load event.
"""

from __future__ import annotations

import random
import shutil
import time
from pathlib import Path
from typing import Any, TextIO

from crag_shared.demo import QUESTIONS, build_corrector, corpus, retrieve
from crag_shared.policy import ActionPolicy
from crag_shared.tools.batch import json_line
from crag_shared.tools.report import write_report

from .popqa import TOP_K, popqa_records


def _shifted(record: dict[str, Any], number: int, rng: random.Random) -> dict[str, Any]:
    shift = rng.uniform(-0.15, 0.15)
    scores = [max(-1.0, min(1.0, s + shift)) for s in record["scores"]]
    thresholds = record["thresholds"]
    action = ActionPolicy(thresholds["upper"], thresholds["lower"]).decide(scores).value
    return {**record, "id": f"q{number}", "question": f"{record['question']} ({number})", "scores": scores,
            "action": action}


def large_run(path: Path, queries: int, bench: Path | None = None, seed: int = 0) -> Path:
    """A `crag run`-shaped JSONL of `queries` results (see the module docstring)."""
    corrector = build_corrector()
    base = []
    asked: list[tuple[str, list[Any]]] = [(q, retrieve(q, corpus())) for q in QUESTIONS]
    if bench is not None and (bench / "popqa_ctxs.jsonl").exists():
        asked += [(record.question, record.passages[:TOP_K]) for record in popqa_records(bench)]
    for question, passages in asked:
        base.append({"question": question, **corrector.correct(question, passages).to_dict(texts=True)})
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as out:
        for number in range(queries):
            out.write(json_line(_shifted(base[number % len(base)], number, rng)) + "\n")
    return path


def open_seconds(page: Path) -> tuple[float, list[str]]:
    """Seconds from navigation to the load event in headless Chromium, and the console errors."""
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise RuntimeError("headless Chromium is not installed (apt-get install chromium)")
    errors: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        tab = browser.new_page()
        tab.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        tab.on("pageerror", lambda error: errors.append(str(error)))
        started = time.perf_counter()
        tab.goto(page.resolve().as_uri(), wait_until="load")
        seconds = time.perf_counter() - started
        browser.close()
    return seconds, errors


def run(out: TextIO, bench: Path | None, work: Path, queries: int = 10_000) -> dict[str, float]:
    """Build the report of a `queries`-query run, open it, print and return the figures."""
    results = large_run(work / "run.jsonl", queries, bench)
    page = work / "report.html"
    started = time.perf_counter()
    write_report(results, page)
    built = time.perf_counter() - started
    opened, errors = open_seconds(page)
    figures = {"queries": queries, "megabytes": page.stat().st_size / 1e6, "build_s": built, "open_s": opened,
               "console_errors": len(errors)}
    out.write(f"crag-bench report: {queries} queries ({results.stat().st_size / 1e6:.1f} MB of results): report "
              f"{figures['megabytes']:.2f} MB (goal < 5), built in {built:.2f} s (goal < 10), opened in headless "
              f"Chromium in {opened:.2f} s (goal < 3), {len(errors)} console errors\n")
    return figures
