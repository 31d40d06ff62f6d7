"""correct_many: the same decisions as correct, in input order, batched across queries, failures isolated."""

import asyncio
import json

import pytest

from crag_shared import (
    CrossEncoderEvaluator,
    FailedCorrection,
    InMemorySearch,
    LexicalEvaluator,
    ReplaySearch,
)
from crag_shared.config import CRAGConfig
from crag_shared.corrector import Corrector
from crag_shared.demo import QUESTIONS, corpus, recorded_web_path, retrieve


def items():
    passages = corpus()
    return [(q, retrieve(q, passages)) for q in QUESTIONS * 3]


def same(a, b):
    return (a.action, a.scores, [(s.text, s.score, s.origin) for s in a.knowledge], a.rewritten_query,
            a.fallbacks) == (b.action, b.scores, [(s.text, s.score, s.origin) for s in b.knowledge],
                             b.rewritten_query, b.fallbacks)


class CountingLexical(LexicalEvaluator):
    def __init__(self):
        super().__init__()
        self.batches = 0

    def evaluate_batch(self, requests):
        self.batches += 1
        return super().evaluate_batch(requests)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_correct_many_equals_correct_in_order(mode):
    evaluator = CountingLexical()
    corrector = Corrector.from_config(CRAGConfig(), web_search=ReplaySearch(recorded_web_path()), evaluator=evaluator)
    batch = items()
    many = corrector.correct_many(batch) if mode == "sync" else asyncio.run(corrector.acorrect_many(batch))
    one_by_one = [corrector.correct(q, p) for q, p in batch]
    assert len(many) == len(batch) and all(same(a, b) for a, b in zip(many, one_by_one))
    assert [r.action.value for r in many[:3]] == ["correct", "ambiguous", "incorrect"]
    assert evaluator.batches <= 6  # a handful of cross-query steps, not one call per query and step


def test_model_scores_are_the_same_across_queries(tiny_bert):
    corrector = Corrector.from_config(CRAGConfig(evaluator=f"cross-encoder:{tiny_bert}", upper=0.0, lower=-0.5))
    assert isinstance(corrector.evaluator, CrossEncoderEvaluator)
    batch = items()[:3]
    many = corrector.correct_many(batch)
    for result, (query, passages) in zip(many, batch):
        assert result.scores == pytest.approx(corrector.correct(query, passages).scores, abs=1e-6)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_one_failing_query_never_loses_the_others(mode):
    corrector = Corrector.from_config(CRAGConfig(upper=0.95, lower=0.9), web_search=InMemorySearch([]))
    batch = [(None, ["x"]), *items()[:3], (42, ["y"])]
    many = corrector.correct_many(batch) if mode == "sync" else asyncio.run(corrector.acorrect_many(batch))
    assert isinstance(many[0], FailedCorrection) and "string" in many[0].error
    assert isinstance(many[-1], FailedCorrection) and "string" in many[-1].error
    assert [r.query for r in many[1:4]] == QUESTIONS
    assert all(not isinstance(r, FailedCorrection) for r in many[1:4])


def test_crag_run_resumes_without_duplicates(bench_dir, tmp_path, capsys):
    import json

    from crag_shared.tools.cli import main

    out = tmp_path / "out.jsonl"
    data = str(bench_dir / "popqa_ctxs.jsonl")
    web = f"replay:{recorded_web_path()}"
    assert main(["run", "--data", data, "--out", str(out), "--limit", "12", "--batch-size", "5", "--web", web]) == 0
    first = out.read_text().splitlines()
    assert len(first) == 12
    with out.open("a") as sink:  # a crash in the middle of writing the next line
        sink.write('{"id": "cut-off", "question": "half a li')
    assert main(["run", "--data", data, "--out", str(out), "--limit", "20", "--web", web]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 20 and len({r["id"] for r in rows}) == 20 and out.read_text().splitlines()[:12] == first
    assert main(["run", "--data", data, "--out", str(out), "--web", web]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len({r["id"] for r in rows}) == len(rows) == 100
    assert "80 corrected, 0 failed, 20 already" in capsys.readouterr().out
    assert main(["run", "--data", data, "--out", str(out), "--web", web]) == 0
    assert "0 corrected, 0 failed, 100 already" in capsys.readouterr().out
    sample = rows[0]
    assert {"action", "abstention", "scores", "strips", "rewritten_query", "web_urls", "trace"} <= set(sample)
    assert all("source_id" in strip and "start" in strip and strip["text"] for strip in sample["strips"])


def test_crag_run_groups_pairs_and_reports_bad_input(tmp_path, capsys):
    import json

    from crag_shared.tools.cli import main

    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps({"query": q, "passage": p.text, "label": 1, "query_id": f"q{i}"}) + "\n"
                            for i, (q, ps) in enumerate(items()[:3]) for p in ps))
    out = tmp_path / "out.jsonl"
    assert main(["run", "--data", str(data), "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["q0", "q1", "q2"] and len(rows[0]["scores"]) == 3
    data.write_text('{"query": "q"}\n')
    assert main(["run", "--data", str(data), "--out", str(tmp_path / "o2.jsonl")]) == 2
    assert "pairs.jsonl:1" in capsys.readouterr().err


@pytest.mark.slow
def test_bench_batch_runs_and_reports_the_ratio(bench_dir):
    import io

    from benchmarks.batch import run

    out = io.StringIO()
    figures = run(out, bench_dir, "lexical", queries=8, batch_size=3, rounds=1)
    assert figures["same"] == 1.0 and figures["speedup"] > 0 and "same decisions: True" in out.getvalue()


@pytest.mark.slow
def test_bench_batch_searches_the_recorded_web_concurrently(bench_dir, capsys):
    from benchmarks.cli import main

    assert main(["batch", "--bench-dir", str(bench_dir), "--queries", "20", "--batch-size", "10",
                 "--rounds", "1", "--web-delay", "0.05", "--upper", "0.6"]) == 0
    report = capsys.readouterr().out
    searched = int(report.split("answering in 50 ms (")[1].split(" queries searched")[0])
    assert searched > 0 and "same decisions: True" in report


def test_crag_run_names_a_bad_web_option_in_one_line(tmp_path, capsys):
    from crag_shared.tools.cli import main

    data = tmp_path / "pairs.jsonl"
    data.write_text('{"query": "q", "passage": "p", "relevant": 1}\n')
    for web in ("bing", "replay:", f"replay:{tmp_path / 'missing.jsonl'}"):
        assert main(["run", "--data", str(data), "--out", str(tmp_path / "o.jsonl"), "--web", web]) == 2
        assert "--web" in capsys.readouterr().err


def write_rows(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def demo_rows(ids=True):
    rows = [{"question": q, "ctxs": [{"title": p.title, "text": p.text} for p in corpus()]} for q in QUESTIONS]
    return [{"id": i, **row} for i, row in enumerate(rows)] if ids else rows


def run_cli(data, out):
    from crag_shared.tools.cli import main

    return main(["run", "--data", str(data), "--out", str(out), "--batch-size", "1"])


def test_crag_run_never_clobbers_a_file_it_did_not_write(tmp_path, capsys):
    data = tmp_path / "data.jsonl"
    write_rows(data, demo_rows())
    before = data.read_bytes()
    assert run_cli(data, data) == 2 and data.read_bytes() == before
    assert "is the input file" in capsys.readouterr().err
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"my": "own data"}\n')
    assert run_cli(data, notes) == 2 and notes.read_text() == '{"my": "own data"}\n'
    assert "not a crag run record" in capsys.readouterr().err


def test_crag_run_repairs_a_torn_last_line_and_resumes_exactly(tmp_path):
    data, out = tmp_path / "data.jsonl", tmp_path / "out.jsonl"
    write_rows(data, demo_rows())
    assert run_cli(data, out) == 0
    lines = out.read_text().splitlines()
    out.write_text("\n".join(lines[:2]) + "\n" + lines[2])  # the last record written whole, its newline lost
    assert run_cli(data, out) == 0
    again = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in again] == ["0", "1", "2"]
    out.write_text("\n".join(lines[:2]) + "\n" + lines[2][:40])  # cut inside the record
    assert run_cli(data, out) == 0
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["0", "1", "2"]


def test_crag_run_refuses_duplicate_ids_and_bad_records_up_front(tmp_path, capsys):
    data, out = tmp_path / "data.jsonl", tmp_path / "out.jsonl"
    rows = demo_rows()
    rows[1]["id"] = "0"  # 0 and "0" are one id
    write_rows(data, rows)
    assert run_cli(data, out) == 2 and "id '0' is used by two records" in capsys.readouterr().err
    assert not out.exists() or out.read_text() == ""
    write_rows(data, [{"id": 1, "ctxs": [{"text": "Paris."}]}])  # no question
    assert run_cli(data, out) == 2 and "the question must be text" in capsys.readouterr().err
    write_rows(data, [{"id": 1, "question": "Capital of France?", "ctxs": ["Paris is the capital of France."]}])
    assert run_cli(data, out) == 0  # ctxs as plain texts
    assert json.loads(out.read_text())["action"] == "correct"


def test_crag_run_without_ids_survives_a_line_added_before_resuming(tmp_path):
    data, out = tmp_path / "data.jsonl", tmp_path / "out.jsonl"
    rows = demo_rows(ids=False)
    write_rows(data, rows[1:])
    assert run_cli(data, out) == 0
    write_rows(data, rows)  # a record inserted at the top: line numbers shift, content ids do not
    assert run_cli(data, out) == 0
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["question"] for r in written) == sorted(QUESTIONS) and len({r["id"] for r in written}) == 3


def test_a_second_crag_run_on_the_same_output_is_refused(tmp_path, capsys):
    import fcntl

    data, out = tmp_path / "data.jsonl", tmp_path / "out.jsonl"
    write_rows(data, demo_rows())
    with (tmp_path / "out.jsonl.lock").open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a running crag run holds it
        assert run_cli(data, out) == 2 and "another crag run is writing" in capsys.readouterr().err
    assert run_cli(data, out) == 0


def test_crag_run_searches_through_a_searxng_spec_and_names_a_missing_key(tmp_path, capsys, crag_fake_web,
                                                                           monkeypatch):
    import json

    from crag_shared.tools.cli import main

    crag_fake_web.add("feilden", "Henry Feilden", ["Henry Feilden was born in 1818 at Blackburn, Lancashire."])
    data, out = tmp_path / "data.jsonl", tmp_path / "out.jsonl"
    data.write_text('{"id": 1, "question": "Where was Henry Feilden born?", '
                    '"ctxs": [{"text": "Bees live in colonies of thousands."}]}\n')
    assert main(["run", "--data", str(data), "--out", str(out), "--web", f"searxng:{crag_fake_web.url}/searxng"]) == 0
    record = json.loads(out.read_text().splitlines()[0])
    assert "1818" in json.dumps(record)  # the result's snippet: its loopback page is refused by the guard
    assert any(r.startswith("/searxng/search") for r in crag_fake_web.requests)
    capsys.readouterr()
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    assert main(["run", "--data", str(data), "--out", str(tmp_path / "o2.jsonl"), "--web", "tavily"]) == 2
    error = capsys.readouterr().err.strip()
    assert "TAVILY_API_KEY" in error and len(error.splitlines()) == 1


def test_crag_run_writes_a_record_with_a_lone_surrogate_and_keeps_it(tmp_path):
    data, out = tmp_path / "data.jsonl", tmp_path / "out.jsonl"
    rows = demo_rows()
    rows[1]["question"] += " \ud800"  # json.dumps escapes it: the input file is valid UTF-8 JSON
    write_rows(data, rows)
    assert run_cli(data, out) == 0
    written = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in written] == ["0", "1", "2"] and written[1]["question"].endswith("\ud800")
    assert run_cli(data, out) == 0 and len(out.read_text().splitlines()) == 3  # a rerun finds it done


def test_crag_run_refuses_a_lock_that_is_a_link_and_locks_the_real_file(tmp_path, capsys):
    import fcntl
    import os

    data, out = tmp_path / "data.jsonl", tmp_path / "out.jsonl"
    write_rows(data, demo_rows())
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    (tmp_path / "out.jsonl.lock").symlink_to(precious)
    assert run_cli(data, out) == 2 and precious.read_text() == "keep me"
    assert "symbolic link" in capsys.readouterr().err
    (tmp_path / "out.jsonl.lock").unlink()
    alias = tmp_path / "alias.jsonl"
    out.touch()
    alias.symlink_to(out)
    with open(tmp_path / "out.jsonl.lock", "w") as held:  # another run holds the real file's lock
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert run_cli(data, alias) == 2 and "another crag run" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "alias.jsonl.lock")
    assert run_cli(data, alias) == 0 and len(out.read_text().splitlines()) == 3
