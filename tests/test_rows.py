"""One row vocabulary: every name a field goes by reads the same record, in every tool, and a bad field is
named with its file and line."""

import json

import pytest

from crag_shared.calibration import read_qa, read_retrieved
from crag_shared.rows import read_records
from crag_shared.tools.batch import read_jobs
from crag_shared.tools.cli import main
from crag_shared.tools.data import load_pairs
from crag_shared.tools.report_data import read_rows
from crag_shared.types import Passage

PASSAGE = "Jørn Utzon designed the Sydney Opera House."


def write(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("row", [
    {"id": 7, "question": "Who designed it?", "answers": ["Utzon"],
     "ctxs": [{"id": "p1", "title": "Opera", "text": PASSAGE, "score": 1.5, "relevant": True, "rank": 0}]},
    {"idx": 7, "query": "Who designed it?", "answer": "Utzon",
     "passages": [{"id": "p1", "title": "Opera", "content": PASSAGE, "score": 1.5, "label": 1, "rank": 0}]},
    {"question_id": "7", "question": "Who designed it?", "answers": "Utzon",
     "ctxs": [{"id": "p1", "title": "Opera", "passage": PASSAGE, "score": 1.5, "relevant": "yes", "rank": 0}]},
])
def test_every_name_of_a_field_reads_the_same_record(tmp_path, row):
    [record] = read_records(write(tmp_path / "data.jsonl", [row]))
    assert (record.id, record.key, record.question, record.answers, record.labels) == \
        ("7", "7", "Who designed it?", ("Utzon",), [True])
    assert record.passages == [Passage(PASSAGE, id="p1", title="Opera", score=1.5, metadata={"rank": 0})]


def test_pair_rows_of_one_question_make_one_record_in_file_order(tmp_path):
    path = write(tmp_path / "pairs.jsonl", [
        {"query": "Who designed it?", "passage": PASSAGE, "label": 1, "query_id": "q1", "split": "eval"},
        {"question": "Where is it?", "text": "It stands in Sydney.", "relevant": False},
        {"question": "Who designed it?", "content": "Bees live in hives.", "relevant": 0, "question_id": "q1"},
    ])
    first, second = read_records(path)
    assert (first.key, first.question, first.labels, first.split) == ("q1", "Who designed it?", [True, False], "eval")
    assert [p.id for p in first.passages] == ["q1:0", "q1:1"] and second.key == "Where is it?"
    assert [j.id for j in read_jobs(path)] == ["q1", "Where is it?"]
    assert [(p.query_id, p.relevant) for p in load_pairs(path)] == [("q1", True), ("Where is it?", False),
                                                                    ("q1", False)]


@pytest.mark.parametrize(("line", "message"), [
    ('{"question": "Q", "ctxs": [{"text": "a"}, {"text": null}]}', r"data\.jsonl:2: ctxs\[1\]\.text: Input should be a "
                                                                   r"valid string, got NoneType"),
    ('{"question": "Q", "passages": [{"title": "T"}]}', r"data\.jsonl:2: passages\[0\]\.passage: Field required"),
    ('{"question": "Q", "ctxs": [3]}', r"data\.jsonl:2: ctxs\[0\]: a passage must be text or an object.*, got int"),
    ('{"question": "Q", "ctxs": [{"text": "a", "score": "high"}]}', r"data\.jsonl:2: ctxs\[0\]\.score: Input should "
                                                                    r"be a valid number, got str"),
    ('{"question": "Q", "ctxs": [{"text": "a", "score": true}]}', r"data\.jsonl:2: ctxs\[0\]\.score: .*, got bool"),
    ('{"question": "Q", "ctxs": [{"text": "a", "relevant": "maybe"}]}', r"data\.jsonl:2: ctxs\[0\]\.relevant: cannot "
                                                                        r"read 'maybe' as a relevance label"),
    ('{"question": "Q", "text": "a", "label": [1]}', r"data\.jsonl:2: label: cannot read \[1\]"),
    ('{"question": "Q", "ctxs": "a"}', r"data\.jsonl:2: ctxs: Input should be a valid list, got str"),
    ('{"query": 3, "ctxs": []}', r"data\.jsonl:2: query: Input should be a valid string, got int"),
    ('{"ctxs": []}', r"data\.jsonl:2: the question must be text \(`query` or `question`\), got nothing"),
    ('{"question": "Q", "answers": [1], "ctxs": []}', r"data\.jsonl:2: answers\[0\]: Input should be a valid string"),
    ('["Q", "a"]', r"data\.jsonl:2: a line must hold a JSON object, not list"),
    ('{"question": "Q"', r"data\.jsonl:2: not a JSON line"),
])
def test_a_bad_field_is_named_with_its_file_and_line(tmp_path, line, message):
    path = write(tmp_path / "data.jsonl", ['{"question": "Fine?", "ctxs": ["yes"]}', line])
    with pytest.raises(ValueError, match=message):
        read_records(path)


def test_crag_run_calibrate_and_report_read_one_file_with_the_other_names(tmp_path, capsys):
    """A file written with `query`/`passages`/`content`/`answer` runs through `crag run`, both kinds of
    `crag calibrate` and `crag report`, as one written with `question`/`ctxs`/`text`/`answers` does."""
    rows = [{"idx": i, "query": q, "answer": a, "passages": [
        {"content": PASSAGE, "title": "Opera", "label": a == "Utzon"},
        {"content": "The Golden Gate Bridge opened in 1937.", "title": "Bridge", "label": a == "1937"},
        {"content": "Bees live in hives of thousands.", "label": False},
        {"content": "Paris is the capital of France.", "label": False},
        {"content": "The Nile is a long river.", "label": False}]}
        for i, (q, a) in enumerate([("Who designed the Sydney Opera House?", "Utzon"),
                                    ("When did the Golden Gate Bridge open?", "1937")])]
    data = write(tmp_path / "data.jsonl", rows)
    assert [q.question for q in read_qa(data)] == [r["query"] for r in rows]
    assert [[p.text for p in passages] for passages in read_retrieved(data, read_qa(data))] == \
        [[p["content"] for p in r["passages"]] for r in rows]
    out, records = tmp_path / "run.jsonl", tmp_path / "records.jsonl"
    assert main(["run", "--data", str(data), "--out", str(out)]) == 0
    assert main(["calibrate", "--data", str(data), "--out", str(tmp_path / "a.json"), "--plot", ""]) == 0
    assert main(["calibrate", "--qa", str(data), "--retrieved", str(data), "--out", str(tmp_path / "b.json"),
                 "--plot", "", "--records", str(records)]) == 0
    assert [r.question for r in read_rows(out)] == [r["query"] for r in rows]
    assert [r.id for r in read_rows(records)][:2] == ["0", "0#near-miss"]
    assert main(["report", str(out), "-o", str(tmp_path / "report.html")]) == 0
    capsys.readouterr()
