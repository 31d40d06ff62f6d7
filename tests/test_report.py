"""`crag report` and the notebook card: one self-contained page from a crag run output, calibration records
or a log of live queries; every untrusted text escaped; the same card from every entry point."""

import json
import re

import pytest

from crag_shared import Corrector
from crag_shared.demo import QUESTIONS, build_corrector, corpus, recorded_web_path, retrieve
from crag_shared.tools.cli import main
from crag_shared.tools.report import build_report
from crag_shared.tools.report_data import read_rows

pytest.importorskip("matplotlib")
HOSTILE = "What is <script>alert(1)</script> & co?"


@pytest.fixture
def run_output(tmp_path):
    """A `crag run` output over the demo questions with recorded web pages, plus a hostile question."""
    data = tmp_path / "questions.jsonl"
    rows = [{"id": f"q{i}", "question": q, "ctxs": [{"text": p.text, "title": p.title} for p in retrieve(q, corpus())]}
            for i, q in enumerate([*QUESTIONS, HOSTILE])]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out.jsonl"
    assert main(["run", "--data", str(data), "--out", str(out), "--web", f"replay:{recorded_web_path()}"]) == 0
    return out


def test_a_run_output_becomes_one_self_contained_page(run_output, tmp_path, capsys):
    page = tmp_path / "report.html"
    assert main(["report", str(run_output), "-o", str(page)]) == 0
    assert "report of 4 queries" in capsys.readouterr().out
    html = page.read_text()
    assert not re.search(r"(src|href)=['\"]?(https?:)?//", html.split("<table id='borderline'")[0])  # nothing fetched
    assert html.count("<svg") == 2  # the action mix and the score histograms; no labels, no trade-off curve
    for section in ("The action mix", "Best scores per action", "Why CRAG abstained", "Fallbacks", "Web",
                    "Latency per stage (ms)", "rewrite + web search", "Borderline queries"):
        assert section in html, section
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert len(re.findall(r"<tr data-action=", html)) == 4


def test_calibration_records_draw_the_trade_off_curve(tmp_path):
    from crag_shared.calibration import calibrate_qa
    from crag_shared.evaluators import LexicalEvaluator
    from crag_shared.types import Passage

    passages = [Passage(p.text, title=p.title) for p in corpus()]
    pairs = [("Who designed the Sydney Opera House?", ["Jørn Utzon"]),
             ("When did the Golden Gate Bridge open?", ["1937"])]
    found = calibrate_qa(Corrector(LexicalEvaluator()), pairs, lambda q: passages, progress=False)
    records = tmp_path / "records.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in found.records()))
    rows = read_rows(records)
    assert {r.kind for r in rows} == {"answerable", "near_miss"} and all(r.labels is not None for r in rows)
    html = build_report(rows, "calibration")
    assert "Keep or pass on" in html and html.count("<svg") == 3


def test_a_log_of_live_queries_from_both_adapters(tmp_path):
    pytest.importorskip("llama_index.core")
    pytest.importorskip("haystack")
    from haystack import Document
    from llama_index.core.schema import NodeWithScore, TextNode

    from crag_haystack import CRAG
    from crag_llamaindex import CRAGQueryEngine
    from crag_llamaindex.testing import FixedRetriever, RuleLLM

    log = tmp_path / "crag-log.jsonl"
    with log.open("a", encoding="utf-8") as sink:  # the recipe the docs show, for each framework
        for question in QUESTIONS:
            found = retrieve(question, corpus())
            nodes = [NodeWithScore(node=TextNode(text=p.text), score=1.0) for p in found]
            response = CRAGQueryEngine(FixedRetriever({question: nodes}), llm=RuleLLM()).query(question)
            sink.write(json.dumps({"question": question, **response.metadata["crag"]}) + "\n")
            result = CRAG().run(query=question, documents=[Document(content=p.text) for p in found])
            sink.write(json.dumps({"question": question, **result["crag"].model_dump()}) + "\n")
    rows = read_rows(log)
    assert [r.action for r in rows[::2]] == [r.action for r in rows[1::2]] and len(rows) == 6
    assert "Latency per stage (ms)" in build_report(rows, "live")


def test_a_malformed_line_is_named(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"action": "correct", "scores": [0.5]}\n{"question": "no scores"}\n')
    assert main(["report", str(bad), "-o", str(tmp_path / "r.html")]) == 2
    assert "bad.jsonl:2: no `scores` list" in capsys.readouterr().err


def test_every_entry_point_shows_the_same_card_in_a_notebook():
    pytest.importorskip("llama_index.core")
    pytest.importorskip("haystack")
    from haystack import Document
    from llama_index.core.schema import NodeWithScore, TextNode

    from crag_haystack import CRAG
    from crag_llamaindex import CRAGQueryEngine
    from crag_llamaindex.testing import FixedRetriever, RuleLLM

    question = QUESTIONS[0]
    texts = [p.text for p in retrieve(question, corpus())] + ["<img src=x onerror=alert(1)> Golden Gate Bridge 1937"]
    core = Corrector().correct(question, texts)
    card = core._repr_html_()
    assert "CRAG: correct" in card and "upper +0.32" in card and "<img" not in card and "&lt;img" in card
    nodes = [NodeWithScore(node=TextNode(text=t), score=1.0) for t in texts]
    response = CRAGQueryEngine(FixedRetriever({question: nodes}), llm=RuleLLM()).query(question)
    report = CRAG().run(query=question, documents=[Document(content=t) for t in texts])["crag"]
    for other in (response.metadata["crag"]._repr_html_(), report._repr_html_()):
        assert other.split("<table")[0] == card.split("<table")[0]  # action, scores and thresholds alike
    abstained = Corrector().correct(QUESTIONS[2], texts)._repr_html_()
    assert "abstained: the retrieved passages were judged irrelevant" in abstained
    web = build_corrector().correct(QUESTIONS[2], texts)._repr_html_()
    assert 'href="https://en.wikipedia.org/wiki/Ulaanbaatar"' in web and "web (" in web


def test_the_cookbook_calibrates_on_both_frameworks_and_writes_both_reports(tmp_path):
    pytest.importorskip("llama_index.core")
    pytest.importorskip("haystack")
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / "cookbook" / "calibrate_and_report.py"
    spec = importlib.util.spec_from_file_location("cookbook", path)
    cookbook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cookbook)
    summary = cookbook.main(tmp_path)
    assert summary["questions"] == 30 and summary["chosen_by"] == "near misses passed on at most 20%"
    for name in ("thresholds.json", "thresholds-haystack.json", "calibration.html", "report.html"):
        assert (tmp_path / name).stat().st_size > 0, name
    assert len(read_rows(tmp_path / "crag-log.jsonl")) == 30
    assert "Keep or pass on" in (tmp_path / "calibration.html").read_text()
