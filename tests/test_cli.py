import subprocess
import sys

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
    assert any("Ulaanbaatar" in s.text for s in result.external)
    run = subprocess.run([sys.executable, "-m", "crag_shared", "demo"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr


def test_bench_web_runs_and_reports_ratios():
    import io

    from crag_shared.tools.bench.web import run

    out = io.StringIO()
    figures = run(out, pages=3, delay=0.05, repeats=1)
    assert figures["pages"] == 3 and figures["ours_s"] > 0 and figures["sequential_s"] > 0
    assert "speed-up over sequential" in out.getvalue()
