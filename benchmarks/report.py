"""`crag-bench report`: the size, build time, peak memory and opening time of `crag report` for a large run.

The run is the demo corrector's real results on the PopQA questions' own top-10 passages and on the demo
questions (web search replayed, so the traces hold web steps and fallbacks), repeated with shifted scores
and fresh ids up to the number of queries asked for; the page is opened in headless Chromium (Debian's
package) through Playwright, and timed to its load event. Peak memory is the resident set of `crag report`
run as a child process, beside that of the same command on a one-query file (the interpreter and
matplotlib), so what the records cost shows apart.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
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


#: `crag report` in a child process that then prints its own peak resident memory (kB, Linux's VmHWM: the
#: process's own high-water mark, not the parent's memory it was forked from).
_PEAK = ("import sys\nfrom crag_shared.tools.cli import main\nstatus = main(sys.argv[1:])\n"
         "print(next(line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM:')))\n"
         "sys.exit(status)")


def peak_megabytes(results: Path, page: Path) -> float:
    """The peak resident memory (MB) of `crag report RESULTS -o PAGE` in a fresh process."""
    done = subprocess.run([sys.executable, "-c", _PEAK, "report", str(results), "-o", str(page)],
                          capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"crag report failed: {done.stderr.strip()}")
    return int(done.stdout.split()[-1]) / 1024


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
    one = work / "one.jsonl"
    with results.open(encoding="utf-8") as lines:
        one.write_text(lines.readline(), encoding="utf-8")
    peak, bare = peak_megabytes(results, work / "peak.html"), peak_megabytes(one, work / "one.html")
    opened, errors = open_seconds(page)
    figures = {"queries": queries, "megabytes": page.stat().st_size / 1e6, "build_s": built, "open_s": opened,
               "console_errors": len(errors), "input_mb": results.stat().st_size / 1e6, "peak_mb": peak,
               "bare_peak_mb": bare}
    out.write(f"crag-bench report: {queries} queries ({figures['input_mb']:.1f} MB of results): report "
              f"{figures['megabytes']:.2f} MB (goal < 5), built in {built:.2f} s (goal < 10), peak memory "
              f"{peak:.0f} MB ({peak - bare:.0f} MB above the {bare:.0f} MB of a one-query report), opened in "
              f"headless Chromium in {opened:.2f} s (goal < 3), {len(errors)} console errors\n")
    return figures
