"""Thresholds from the questions and answers a user keeps, on their own retriever: the answer rule, clear
errors for bad inputs, the near misses and the trade-off, both frameworks' calls and the CLI."""

import json
from pathlib import Path

import pytest

from crag_shared import ActionPolicy, Corrector
from crag_shared.calibration import QAPair, calibrate_qa, holds_answer, read_qa, read_retrieved
from crag_shared.evaluators import LexicalEvaluator
from crag_shared.tools.cli import main
from crag_shared.types import Passage

COOKBOOK = Path(__file__).resolve().parents[1] / "examples" / "cookbook"


def corpus() -> list[dict]:
    return [json.loads(line) for line in (COOKBOOK / "corpus.jsonl").open(encoding="utf-8")]


def qa() -> list[QAPair]:
    return read_qa(COOKBOOK / "qa.jsonl")


@pytest.mark.parametrize(("text", "answers", "held"), [
    ("He was born in Ulm in 1879.", ["Ulm"], True),
    ("The Ulmer Münster is a church.", ["Ulm"], False),          # no letter may follow the answer
    ("in 18790 BC", ["1879"], False),                            # nor a digit
    ("the 1879 edition", ["1879"], True),
    ("Designed by JØRN  UTZON.", ["Jørn Utzon"], True),          # case and spacing do not matter
    ("Designed by Utzon", ["Jørn Utzon", "Utzon"], True),        # any alias
    ("born in Warsaw", ["", "  "], False),                       # an empty answer matches nothing
    ("埃菲尔铁塔建于1889年", ["埃菲尔铁塔"], True),                  # unspaced scripts: any occurrence
    ("ﬁve", ["five"], True),                                     # NFKC: the ligature is "fi"
])
def test_the_answer_rule(text, answers, held):
    assert holds_answer(text, answers) is held


def test_bad_inputs_say_which_line_and_what_is_wrong(tmp_path):
    path = tmp_path / "qa.jsonl"
    cases = {'{"question": "Who?", "answers": ["x"]}\n{"question": "Where?"\n': ":2: not a JSON line",
             '{"question": "Who?"}\n': ":1: `answers` must be a list of strings",
             '{"question": "", "answers": ["x"]}\n': ":1: `question` must be non-empty text",
             '{"question": "Who?", "answers": [""]}\n': ":1: no non-empty answer",
             '["Who?", "x"]\n': ":1: expected a question with answers, got list",
             "\n\n": "no question-answer pairs"}
    for text, message in cases.items():
        path.write_text(text)
        with pytest.raises(ValueError, match=message):
            read_qa(path)
    pairs = [QAPair("Who?", ("x",), "1"), QAPair("Where?", ("y",))]
    retrieved = tmp_path / "retrieved.jsonl"
    retrieved.write_text('{"id": "1", "passages": ["x is here"]}\n')
    with pytest.raises(ValueError, match=r"no retrieved passages for 1 question.*'Where\?'"):
        read_retrieved(retrieved, pairs)
    retrieved.write_text('{"id": "1", "passages": [3]}\n')
    with pytest.raises(ValueError, match=r":1: passages\[0\]: a passage must be text"):
        read_retrieved(retrieved, pairs)


def test_calibration_counts_answerless_questions_adds_near_misses_and_reads_back(tmp_path):
    texts = [p["text"] for p in corpus()]
    by_title = {}
    for p in corpus():
        by_title.setdefault(p["title"], []).append(Passage(p["text"], id=p["id"], title=p["title"]))
    pairs = qa()
    retrieved = [next(v for k, v in by_title.items() if k.split()[-1] in q.question) for q in pairs]
    pairs.append(QAPair("Who painted the Mona Lisa?", ("Leonardo da Vinci",), "mona"))  # nothing retrieved holds it
    retrieved.append([Passage(texts[0])])
    out = tmp_path / "thresholds.json"
    found = calibrate_qa(Corrector(LexicalEvaluator()), pairs, retrieved, evaluator_name="lexical", progress=False,
                         out=out)
    assert found.count("answerable") == 30 and found.no_answer == ["Who painted the Mona Lisa?"]
    assert found.count("near_miss") == 30  # every question: one passage with the answer, three of its entity without
    summary = json.loads(out.read_text())
    assert summary["questions"] == 31 and summary["no_answer"] == 1 and summary["near_miss_queries"] == 30
    assert ActionPolicy.load(out) == ActionPolicy(*found.thresholds)
    kept = [row["answers_kept"] for row in summary["tradeoff"]]
    passed = [row["near_misses_passed"] for row in summary["tradeoff"]]
    assert kept == sorted(kept, reverse=True) and passed == sorted(passed, reverse=True)
    assert kept[0] == 30 and passed[-1] == 0
    fitted = next(row for row in summary["tradeoff"] if row["upper"] == summary["upper"])
    assert fitted["answers_kept"] > fitted["near_misses_passed"]
    with pytest.raises(ValueError, match="none of the 1 questions has a retrieved passage holding its answer"):
        calibrate_qa(Corrector(LexicalEvaluator()), pairs[-1:], retrieved[-1:], progress=False)


def test_llamaindex_calibrates_on_an_index_and_its_thresholds_load_everywhere(tmp_path):
    pytest.importorskip("llama_index.core")
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import TextNode

    import crag_llamaindex
    from crag_llamaindex import CRAGPostprocessor, CRAGQueryEngine
    from crag_llamaindex.testing import HashingEmbedding, RuleLLM

    index = VectorStoreIndex([TextNode(text=p["text"], metadata={"title": p["title"]}) for p in corpus()],
                             embed_model=HashingEmbedding())
    out = tmp_path / "thresholds.json"
    found = crag_llamaindex.calibrate(index, COOKBOOK / "qa.jsonl", out=out, similarity_top_k=5, progress=False)
    assert found.count("answerable") + found.count("no_answer") == 30 and found.evaluator == "lexical"
    assert all(len(q.scores) == 5 for q in found.queries if q.kind != "near_miss")  # top-k as configured
    engine = CRAGQueryEngine.from_index(index, similarity_top_k=5, thresholds_path=str(out), llm=RuleLLM())
    same = crag_llamaindex.calibrate(engine, qa(), similarity_top_k=5, progress=False)  # the engine's retriever
    assert same.thresholds == found.thresholds
    assert CRAGPostprocessor(thresholds_path=str(out)).corrector.policy == ActionPolicy(*found.thresholds)
    with pytest.raises(TypeError, match="index, retriever or query engine"):
        crag_llamaindex.calibrate("index", qa())


def test_haystack_calibrates_on_a_retriever_and_on_a_pipeline(tmp_path):
    pytest.importorskip("haystack")
    from haystack import Document, Pipeline
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    import crag_haystack
    from crag_haystack import CRAG

    store = InMemoryDocumentStore()
    store.write_documents([Document(content=p["text"], meta={"title": p["title"]}) for p in corpus()])
    retriever = InMemoryBM25Retriever(store, top_k=4)
    out = tmp_path / "thresholds.json"
    direct = crag_haystack.calibrate(retriever, COOKBOOK / "qa.jsonl", out=out, progress=False)
    pipeline = Pipeline()
    pipeline.add_component("retriever", retriever)
    through = crag_haystack.calibrate(pipeline, qa(), retriever="retriever", progress=False)
    assert through.thresholds == direct.thresholds and direct.count("answerable") >= 25
    assert CRAG(thresholds_path=str(out)).corrector.policy == ActionPolicy(*direct.thresholds)
    with pytest.raises(ValueError, match="name the pipeline's retriever: retriever= one of retriever"):
        crag_haystack.calibrate(pipeline, qa())


def test_the_cli_calibrates_from_qa_and_retrieved_files(tmp_path, capsys):
    lines = [{"id": q.id, "passages": [{"text": p["text"], "title": p["title"]} for p in corpus()
                                       if p["title"].split()[-1] in q.question]} for q in qa()]
    retrieved = tmp_path / "retrieved.jsonl"
    retrieved.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out, records = tmp_path / "thresholds.json", tmp_path / "records.jsonl"
    assert main(["calibrate", "--qa", str(COOKBOOK / "qa.jsonl"), "--retrieved", str(retrieved), "--out", str(out),
                 "--records", str(records), "--plot", ""]) == 0
    said = capsys.readouterr().out
    assert "30 with a retrieved passage holding an answer, 0 without" in said and "<- chosen" in said
    assert len(records.read_text().splitlines()) == 60 and json.loads(out.read_text())["answerable"] == 30
    assert main(["calibrate", "--qa", str(COOKBOOK / "qa.jsonl"), "--out", str(out), "--plot", ""]) == 2
    assert "--qa needs --retrieved" in capsys.readouterr().err
    retrieved.write_text('{"id": "q00", "passages": []}\nnot json\n')
    assert main(["calibrate", "--qa", str(COOKBOOK / "qa.jsonl"), "--retrieved", str(retrieved), "--out",
                 str(out), "--plot", ""]) == 2
    assert "retrieved.jsonl:2: not a JSON line" in capsys.readouterr().err


def test_a_near_miss_budget_chooses_the_upper_threshold_from_the_trade_off(tmp_path, capsys):
    pairs = qa()
    by_title = {}
    for p in corpus():
        by_title.setdefault(p["title"], []).append(p["text"])
    retrieved = [next(v for k, v in by_title.items() if k.split()[-1] in q.question) for q in pairs]
    fitted = calibrate_qa(Corrector(LexicalEvaluator()), pairs, retrieved, progress=False)
    chosen = fitted.choose(0.2)
    row = next(r for r in chosen.tradeoff if r.upper == chosen.thresholds[0])
    assert row.near_misses_passed <= 0.2 * 30 and chosen.thresholds[1] <= chosen.thresholds[0]
    looser = [r for r in chosen.tradeoff if r.upper < chosen.thresholds[0]]
    assert all(r.near_misses_passed > 0.2 * 30 for r in looser)  # the lowest upper within the budget
    assert row.answers_kept >= next(r for r in fitted.tradeoff if r.upper == fitted.thresholds[0]).answers_kept
    assert chosen.summary()["chosen_by"] == "near misses passed on at most 20%"
    with pytest.raises(ValueError, match="share in"):
        fitted.choose(20)
    lines = [{"id": q.id, "passages": texts} for q, texts in zip(pairs, retrieved)]
    path = tmp_path / "retrieved.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "t.json"
    assert main(["calibrate", "--qa", str(COOKBOOK / "qa.jsonl"), "--retrieved", str(path), "--out", str(out),
                 "--plot", "", "--near-miss-budget", "0.2"]) == 0
    assert json.loads(out.read_text())["upper"] == chosen.thresholds[0]
    assert "thresholds (near misses passed on at most 20%)" in capsys.readouterr().out


def test_long_calibrations_show_a_progress_bar(capsys):
    texts = [[p["text"] for p in corpus()[:4]] for _ in qa()]
    calibrate_qa(Corrector(LexicalEvaluator()), qa(), texts, progress=True)
    shown = capsys.readouterr().err
    assert "scoring" in shown and "30/30" in shown


def test_calibration_reads_the_popqa_records_as_crag_run_does(bench_dir, tmp_path, capsys):
    """One row vocabulary: the PopQA file `crag run` corrects serves, unchanged, as both the questions with
    answers and the retrieved passages of `crag calibrate --qa/--retrieved`; each question gets the passages
    crag run gives it, and is scored as crag run's Corrector scores it (`--titles` included)."""
    from crag_shared.tools.batch import read_jobs

    data = bench_dir / "popqa_ctxs.jsonl"
    jobs = list(read_jobs(data))
    pairs = read_qa(data)
    assert [(q.id, q.question) for q in pairs] == [(job.id, job.question) for job in jobs]
    assert read_retrieved(data, pairs) == [job.passages for job in jobs]
    assert jobs[0].passages[0].title == "Henry Feilden (Conservative politician)"
    subset = tmp_path / "popqa.jsonl"
    subset.write_text("".join(data.read_text(encoding="utf-8").splitlines(keepends=True)[:12]), encoding="utf-8")
    ran, records = tmp_path / "run.jsonl", tmp_path / "records.jsonl"
    assert main(["run", "--data", str(subset), "--out", str(ran), "--titles"]) == 0
    assert main(["calibrate", "--qa", str(subset), "--retrieved", str(subset), "--titles", "--out",
                 str(tmp_path / "t.json"), "--plot", "", "--records", str(records)]) == 0
    capsys.readouterr()
    run_scores = {line["id"]: line["scores"] for line in map(json.loads, ran.read_text().splitlines())}
    fitted = {line["id"]: line["scores"] for line in map(json.loads, records.read_text().splitlines())
              if line["kind"] != "near_miss"}
    assert len(fitted) == 12 and fitted == run_scores


def test_thresholds_keeping_under_half_the_answers_warn_with_the_budget_that_keeps_more(bench_dir, tmp_path, capsys,
                                                                                       caplog):
    """On 20 PopQA questions Eq. 2's upper threshold keeps 7 of 20 answers: the call, its result, the thresholds
    file and `crag calibrate` say so, with the near_miss_budget that keeps the share asked for (80 %)."""
    import logging
    import re

    subset = tmp_path / "popqa.jsonl"
    lines = (bench_dir / "popqa_ctxs.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[:20]
    subset.write_text("".join(lines), encoding="utf-8")
    pairs = read_qa(subset)
    with caplog.at_level(logging.WARNING, logger="crag"):
        found = calibrate_qa(Corrector(LexicalEvaluator(), score_titles=True), pairs, read_retrieved(subset, pairs),
                             progress=False)
    kept = next(r for r in found.tradeoff if r.upper == found.thresholds[0]).answers_kept
    answerable = found.count("answerable")
    assert 2 * kept < answerable
    warning = next(w for w in found.warnings if w.startswith("the thresholds keep"))
    assert (f"keep {kept} of {answerable} answers ({kept / answerable:.0%}, under the 80% asked for; upper "
            f"{found.thresholds[0]:+.2f})") in warning
    budget = float(re.search(r"near_miss_budget=([0-9.]+)", warning).group(1))
    better = found.choose(budget)
    better_kept = next(r for r in better.tradeoff if r.upper == better.thresholds[0]).answers_kept
    assert better_kept >= 0.8 * answerable and f"keeps {better_kept} (" in warning
    assert not any(w.startswith("the thresholds keep") for w in better.warnings)  # the budget's choice keeps 80 %
    assert not any(w.startswith("the thresholds keep") for w in calibrate_qa(
        Corrector(LexicalEvaluator(), score_titles=True), pairs, read_retrieved(subset, pairs), progress=False,
        keep_answers=kept / answerable).warnings)  # a share the thresholds meet is no warning
    assert any(r.name == "crag" and r.getMessage() == f"crag calibration: {warning}" for r in caplog.records)
    assert found.summary()["warnings"] == found.warnings

    out = tmp_path / "t.json"
    assert main(["calibrate", "--qa", str(subset), "--retrieved", str(subset), "--titles", "--out", str(out),
                 "--plot", ""]) == 0
    assert f"warning: {warning}" in capsys.readouterr().out
    assert json.loads(out.read_text())["warnings"] == [warning]
    assert main(["calibrate", "--qa", str(subset), "--retrieved", str(subset), "--titles", "--out", str(out),
                 "--plot", "", "--near-miss-budget", str(budget)]) == 0
    assert "warning:" not in capsys.readouterr().out
    cookbook = calibrate_qa(Corrector(LexicalEvaluator()), qa(), [[p["text"] for p in corpus()]] * 30, progress=False)
    kept = next(r for r in cookbook.tradeoff if r.upper == cookbook.thresholds[0]).answers_kept
    assert 2 * kept >= 30 and kept < 24 and "under the 80% asked for" in cookbook.warnings[0]  # 70 %: warned
    halves = calibrate_qa(Corrector(LexicalEvaluator()), qa(), [[p["text"] for p in corpus()]] * 30, progress=False,
                          keep_answers=0.5)
    assert halves.warnings == []  # half asked for, 70 % kept
