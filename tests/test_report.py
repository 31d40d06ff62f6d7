"""`crag report` and the card: one self-contained page from a crag run output, calibration records or a log
of live queries, each query opening to its card (every retrieved passage as judged, the answer marked);
every untrusted text escaped; the same card from every entry point; a bad record is one line of error and
never costs the previous report."""

import json
import re
import warnings
from html import escape

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
            response = CRAGQueryEngine(FixedRetriever({question: nodes}), llm=RuleLLM(),
                                       evaluator="default").query(question)
            sink.write(json.dumps({"question": question, **response.metadata["crag"]}) + "\n")
            result = CRAG(evaluator="default").run(query=question, documents=[Document(content=p.text) for p in found])
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
    assert "CRAG: correct" in card and "upper +0.00" in card and "<img" not in card and "&lt;img" in card
    nodes = [NodeWithScore(node=TextNode(text=t), score=1.0) for t in texts]
    response = CRAGQueryEngine(FixedRetriever({question: nodes}), llm=RuleLLM(), evaluator="default").query(question)
    report = CRAG(evaluator="default").run(query=question, documents=[Document(content=t) for t in texts])["crag"]
    strips = [escape(" ".join(s.text.split())) for s in core.knowledge]
    assert strips and "Golden Gate" in strips[0]
    for other in (card, response.metadata["crag"]._repr_html_(), report._repr_html_()):
        assert other.split("<table")[0] == card.split("<table")[0]  # action, scores and thresholds alike
        strip_cells = other.split("<caption>knowledge strips</caption>")[1]
        assert all(f"<td>{text}</td>" in strip_cells for text in strips)  # each strip's text, not an empty cell
        passages = other.split("<caption>retrieved passages</caption>")[1].split("</table>")[0]
        assert passages.count("<tr class='crag-passage") == len(texts)  # each retrieved passage, as judged
        assert "yes: 1 strip" in passages and "no: below the lower threshold" in passages
        assert "does not name &#x27;Golden Gate Bridge&#x27; in full" in passages  # the judge's reason
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


def _table_rows(html: str) -> dict[str, str]:
    """The report table's rows by query id."""
    rows = html.split("<table id='borderline'>")[1].split("<tr data-action=")[1:]
    return {re.search(r"<td>([^<]*)</td>", row).group(1): row for row in rows}


def test_each_query_opens_to_its_passages_and_the_answer_is_marked(answered_run, tmp_path):
    page = tmp_path / "report.html"
    assert main(["report", str(answered_run), "-o", str(page)]) == 0
    rows = _table_rows(page.read_text())
    mongolia = rows["mongolia"]  # CRAG abstained: every passage judged irrelevant, no web search
    assert "abstained: the retrieved passages were judged irrelevant" in mongolia
    for title in ("Golden Gate Bridge", "Sydney Opera House", "Marie Curie"):
        assert f"<b>{title}</b>" in mongolia
    assert "The Golden Gate Bridge is a suspension bridge spanning" in mongolia
    assert mongolia.count("no: the action is incorrect") == 3 and "data-refused='0'" in mongolia
    near = rows["near-miss"]  # the one passage holding the answer was turned away, and the card says why
    assert "data-refused='1'" in near and ">refused</td>" in near and "answer refused" in near
    answer = near.split("<tr class='crag-passage crag-answer'>")[1].split("</tr>")[0]
    assert "The bridge opened to traffic in May 1937" in answer and "does not name &#x27;Golden Gate" in answer
    bridge = rows["bridge"]
    assert "data-refused='0'" in bridge and ">kept</td>" in bridge and "yes: 1 strip" in bridge
    assert "only the queries whose answer-bearing passage was refused</label> (1 in all)" in page.read_text()


def test_a_run_keeps_the_passages_bounded_and_the_answer_labels(answered_run):
    from crag_shared.summary import PREVIEW_CHARS

    lines = [json.loads(line) for line in answered_run.read_text().splitlines()]
    assert [line["labels"] for line in lines] == [[True, False, False], [False, False, False], [False, False, True]]
    assert all(len(p["text"]) <= PREVIEW_CHARS + 2 for line in lines for p in line["passages"])
    assert [p["title"] for p in lines[1]["passages"]] == ["Golden Gate Bridge", "Sydney Opera House", "Marie Curie"]


def test_a_kept_lone_surrogate_reports_and_a_failed_report_keeps_the_previous_one(tmp_path, capsys):
    data = tmp_path / "surrogate.jsonl"
    passages = [{"text": p.text, "title": f"{p.title} \ud800"} for p in retrieve(QUESTIONS[0], corpus())]
    data.write_text(json.dumps({"id": "s", "question": "When did the Golden Gate \ud800 Bridge open?",
                                "ctxs": passages}) + "\n")
    out = tmp_path / "out.jsonl"
    assert main(["run", "--data", str(data), "--out", str(out)]) == 0 and "\\ud800" in out.read_text()
    page = tmp_path / "report.html"
    assert main(["report", str(out), "-o", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    assert "When did the Golden Gate Bridge open?" in html and "<b>Golden Gate Bridge</b>" in html
    before = page.read_bytes()
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"action": "correct", "scores": [0.5], "strips": [{"score": "high", "origin": "web"}]}\n')
    assert main(["report", str(bad), "-o", str(page)]) == 2
    assert page.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


@pytest.mark.parametrize("record,says", [
    ({"strips": [{"score": "high", "origin": "web"}]}, "strips[0].score: Input should be a valid number, got str"),
    ({"strips": [7]}, "strips[0]: Input should be a dictionary or an instance of SummaryStrip, got int"),
    ({"abstention": ["no web"]}, "abstention: Input should be a dictionary or an instance of Abstention, got list"),
    ({"fallbacks": [{"step": "web_search", "reason": None, "applied": "x"}]},
     "fallbacks[0].reason: Input should be a valid string"),
    ({"passages": [{"index": 0, "text": ["x"]}]}, "passages[0].text: Input should be a valid string, got list"),
    ({"thresholds": {"upper": "high", "lower": 0}}, "thresholds.upper: Input should be a valid number, got str"),
    ({"web_urls": [None]}, "web_urls[0]: Input should be a valid string, got NoneType"),
    ({"labels": "yes"}, "labels: expected a list of true or false"),
    ({"action": 3}, "action: Input should be a valid string, got int"),
    ({"scores": [0.5, "0.7"]}, "scores[1]: Input should be a valid number, got str"),
    ({"trace": {"steps": [{"step": ["evaluate"], "ms": 3}]}}, "trace.steps[0].step: expected text, got list"),
    ({"trace": {"steps": ["evaluate"]}}, "trace.steps[0].step: expected text, got str"),
    ({"batched_queries": 0}, "batched_queries: expected a whole number of at least 1"),
])
def test_a_nested_field_of_the_wrong_kind_is_one_line_of_error(tmp_path, capsys, record, says):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"action": "correct", "scores": [0.5], **record}) + "\n")
    assert main(["report", str(bad), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"bad.jsonl:1: {says}" in err and "Traceback" not in err, err
    assert not (tmp_path / "r.html").exists()


def test_the_page_allows_no_form_to_be_sent(run_output, tmp_path):
    page = tmp_path / "report.html"
    assert main(["report", str(run_output), "-o", str(page)]) == 0
    policy = re.search(r"Content-Security-Policy' content=\"([^\"]+)\"", page.read_text()).group(1)
    assert "default-src 'none'" in policy and "form-action 'none'" in policy


def test_the_card_module_keeps_its_old_import_path_with_a_warning():
    from crag_shared import summary

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from crag_shared.notebook import Verdict, verdict_html
    assert (Verdict, verdict_html) == (summary.Verdict, summary.verdict_html)
    assert [str(w.message).split(":")[0] for w in caught] == [
        "crag_shared.notebook.Verdict is deprecated since 0.3.0 and is removed in 0.4.0",
        "crag_shared.notebook.verdict_html is deprecated since 0.3.0 and is removed in 0.4.0"]


def test_the_table_keeps_cards_for_the_nearest_and_the_refused_only(tmp_path):
    from crag_shared.tools.report_data import BORDERLINE_ROWS

    thresholds = {"upper": 0.3, "lower": -0.5}
    near = [{"id": f"n{i}", "question": "q", "scores": [0.3 + i / 10_000, -0.9], "labels": [True, False],
             "thresholds": thresholds} for i in range(BORDERLINE_ROWS + 100)]
    refused = [{"id": f"r{i}", "question": "q", "scores": [0.99, -0.99], "labels": [False, True],
                "thresholds": thresholds} for i in range(30)]  # far from a threshold; the answer scored -0.99
    records = tmp_path / "records.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in [*near[:300], *refused, *near[300:]]))
    rows = read_rows(records)
    listed = {r.id for r in rows if r.summary is not None}
    assert listed == {f"n{i}" for i in range(BORDERLINE_ROWS)} | {f"r{i}" for i in range(30)}
    assert all(r.refused for r in rows if r.id.startswith("r")) and not any(r.refused for r in rows[:300])
    html = build_report(rows, "bounded")
    assert html.count("<tr data-action=") == BORDERLINE_ROWS + 30 and html.count("data-refused='1'") == 30


def test_a_run_output_shows_each_questions_share_of_its_batch_not_the_batch(run_output):
    records = [json.loads(line) for line in run_output.read_text().splitlines()]
    assert {r["batched_queries"] for r in records} == {4}
    rows = read_rows(run_output)
    for row, record in zip(rows, records):
        batch_total = next(s["total_ms"] for s in record["trace"]["steps"] if s["step"] == "result")
        assert row.stages["result"] == record["latency_ms"]
        assert row.stages["evaluate"] <= batch_total / 4 + 1e-6  # a quarter of the batch's scoring
