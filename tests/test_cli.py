import subprocess
import sys

import pytest

from crag_shared.demo import QUESTIONS, build_corrector, corpus, retrieve
from crag_shared.tools.cli import main


def test_demo_shows_all_three_actions(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    for action in ("action: CORRECT", "action: AMBIGUOUS", "action: INCORRECT"):
        assert action in out
    assert "https://en.wikipedia.org/wiki/Ulaanbaatar" in out  # web knowledge carries its source


def test_demo_uses_replayed_web_search_and_runs_as_module():
    corrector = build_corrector()
    result = corrector.correct(QUESTIONS[2], retrieve(QUESTIONS[2], corpus()))
    assert type(corrector.web_search).__name__ == "ReplaySearch"
    assert type(corrector.evaluator).__name__ == "LexicalEvaluator"  # model-free, whatever the default judge is
    assert any("Ulaanbaatar" in s.text for s in result.external)
    run = subprocess.run([sys.executable, "-m", "crag_shared", "demo"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr


@pytest.mark.slow
def test_bench_web_runs_and_reports_ratios():
    import io

    from benchmarks.web import run

    out = io.StringIO()
    figures = run(out, pages=3, delay=0.05, repeats=1)
    assert figures["pages"] == 3 and figures["ours_s"] > 0 and figures["sequential_s"] > 0
    assert "speed-up over sequential" in out.getvalue()


@pytest.mark.parametrize("content", [
    b'{"results": []}\n',  # no query
    b'{"query": 3, "results": []}\n',
    b'{"query": "q", "results": [{"title": "t"}]}\n',  # no url
    b'{"query": "q", "results": [{"title": "t", "url": "u", "text": null}]}\n',
    b'["not", "an", "object"]\n',
    b'\xff\xfe not utf-8\n',
    b'[' * 100_000 + b'\n',
])
def test_a_malformed_replay_file_is_one_line_naming_it(tmp_path, capsys, content):
    data, replay = tmp_path / "data.jsonl", tmp_path / "replay.jsonl"
    data.write_text('{"id": 1, "question": "q?", "ctxs": [{"text": "Bees live in colonies."}]}\n')
    replay.write_bytes(content)
    assert main(["run", "--data", str(data), "--out", str(tmp_path / "out.jsonl"), "--web", f"replay:{replay}"]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "Traceback" not in error
    assert f"{replay}:1: not a replay record" in error or f"{replay}:1: not a JSON line" in error


def test_out_must_be_a_regular_file(tmp_path, capsys):
    import os

    data, fifo = tmp_path / "data.jsonl", tmp_path / "out.fifo"
    data.write_text('{"id": 1, "question": "q?", "ctxs": [{"text": "Bees live in colonies."}]}\n')
    os.mkfifo(fifo)
    for out in (str(fifo), "/dev/zero"):
        assert main(["run", "--data", str(data), "--out", out]) == 2
        assert "not a regular file" in capsys.readouterr().err
