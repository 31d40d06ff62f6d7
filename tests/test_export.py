"""`crag export`: a real `crag run` output as ragas and deepeval rows, through the real command, with the field
names of the tools' own dataset types; the example that loads them."""

import importlib.util
import json
from pathlib import Path

import pytest

from crag_shared.tools.cli import main

ROOT = Path(__file__).resolve().parents[1]
COOKBOOK = ROOT / "examples" / "cookbook"
#: `ragas.dataset_schema.SingleTurnSample`'s fields and `deepeval.dataset.Golden`'s (as its JSONL loader names
#: them), read from ragas 0.4.3 and deepeval 4.3.1; checked against the installed tool where there is one.
RAGAS_FIELDS = {"user_input", "retrieved_contexts", "reference_contexts", "retrieved_context_ids",
                "reference_context_ids", "response", "multi_responses", "reference", "rubrics", "persona_name",
                "query_style", "query_length"}
DEEPEVAL_FIELDS = {"input", "actual_output", "expected_output", "context", "retrieval_context", "tools_called",
                   "expected_tools", "token_cost", "input_token_count", "output_token_count", "comments", "name",
                   "source_file", "additional_metadata", "custom_column_key_values"}


def run_data(tmp_path: Path) -> Path:
    """Six cookbook questions with their entity's passages and answers, and one whose passages are about
    another entity (judged no better than Ambiguous: CRAG abstains, no web search configured)."""
    corpus = [json.loads(line) for line in (COOKBOOK / "corpus.jsonl").open(encoding="utf-8")]
    questions = [json.loads(line) for line in (COOKBOOK / "qa.jsonl").open(encoding="utf-8")][:6]
    rows = [{**q, "ctxs": [p for p in corpus if p["title"].split()[-1] in q["question"]]} for q in questions]
    rows.append({"id": "off", "question": "Who painted the Mona Lisa?", "answers": ["Leonardo da Vinci"],
                 "ctxs": [p for p in corpus if p["title"] == "Marie Curie"]})
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_crag_export_writes_a_ragas_row_a_query_of_a_crag_run_output(tmp_path, capsys):
    data, run, out = run_data(tmp_path), tmp_path / "run.jsonl", tmp_path / "ragas.jsonl"
    assert main(["run", "--data", str(data), "--out", str(run)]) == 0
    assert main(["export", str(run), "--format", "ragas", "-o", str(out), "--data", str(data)]) == 0
    assert f"exported 7 queries as ragas rows (7 with a reference): {out}" in capsys.readouterr().out
    ran, rows = read(run), read(out)
    assert len(rows) == len(ran) == 7
    for row, result in zip(rows, ran):
        assert row["user_input"] == result["question"]
        assert row["retrieved_contexts"] == [s["text"] for s in result["strips"]]  # what CRAG handed on
        assert set(row) - {"crag"} <= RAGAS_FIELDS
        verdict = row["crag"]
        assert (verdict["id"], verdict["action"], verdict["scores"]) == (result["id"], result["action"],
                                                                        result["scores"])
        assert verdict["thresholds"] == result["thresholds"] and verdict["reason"]
    by_id = {row["crag"]["id"]: row for row in rows}
    assert by_id["q01"]["reference"] == "polonium" and by_id["q01"]["crag"]["answers"] == ["polonium", "radium"]
    assert by_id["q00"]["retrieved_context_ids"][0].startswith("marie-curie-")
    off = by_id["off"]
    assert off["crag"]["abstained"] and off["retrieved_contexts"] == []
    assert off["crag"]["reason"] == next(r for r in ran if r["id"] == "off")["abstention"]["reason"]

    assert main(["export", str(run), "--format", "ragas", "-o", str(out)]) == 0  # no input: no reference
    assert "(0 with a reference)" in capsys.readouterr().out
    assert not any("reference" in row for row in read(out))


def test_crag_export_writes_deepeval_goldens(tmp_path, capsys):
    data, run, out = run_data(tmp_path), tmp_path / "run.jsonl", tmp_path / "deepeval.jsonl"
    assert main(["run", "--data", str(data), "--out", str(run)]) == 0
    assert main(["export", str(run), "--format", "deepeval", "-o", str(out), "--data", str(data)]) == 0
    ran, rows = read(run), read(out)
    for row, result in zip(rows, ran, strict=True):
        assert set(row) <= DEEPEVAL_FIELDS
        assert row["input"] == result["question"] and row["name"] == result["id"]
        assert row["retrieval_context"] == [s["text"] for s in result["strips"]]
        assert row["additional_metadata"]["crag"]["action"] == result["action"]
    assert rows[0]["expected_output"] == "Warsaw"


def test_the_field_names_are_the_installed_tools_own():
    if importlib.util.find_spec("ragas") is None and importlib.util.find_spec("deepeval") is None:
        pytest.skip("neither ragas nor deepeval is installed (both are optional)")
    if importlib.util.find_spec("ragas"):
        from ragas.dataset_schema import SingleTurnSample

        assert {"user_input", "retrieved_contexts", "retrieved_context_ids", "reference"} <= set(
            SingleTurnSample.model_fields)
    if importlib.util.find_spec("deepeval"):
        from deepeval.dataset import Golden

        assert {"input", "retrieval_context", "expected_output", "name", "additional_metadata"} <= set(
            Golden.model_fields)


def test_a_file_that_is_no_run_output_and_a_bad_format_are_one_line_each(tmp_path, capsys):
    data, run, out = run_data(tmp_path), tmp_path / "run.jsonl", tmp_path / "out.jsonl"
    out.write_text("kept\n")
    assert main(["run", "--data", str(data), "--out", str(run)]) == 0
    capsys.readouterr()
    assert main(["export", str(data), "--format", "ragas", "-o", str(out)]) == 2
    assert "data.jsonl:1: not a crag run output record" in capsys.readouterr().err
    assert out.read_text() == "kept\n" and not list(tmp_path.glob("*.partial"))  # the old file stays whole
    broken = tmp_path / "broken.jsonl"
    record = json.loads(run.read_text().splitlines()[0])
    broken.write_text(json.dumps({**record, "thresholds": [record["thresholds"]]}) + "\n")
    assert main(["export", str(broken), "--format", "ragas", "-o", str(out)]) == 2
    assert "broken.jsonl:1: not a crag run output record: `thresholds` is missing or of the wrong kind" in \
        capsys.readouterr().err
    assert main(["export", str(run), "--format", "trulens", "-o", str(out)]) == 2
    assert "invalid choice: 'trulens'" in capsys.readouterr().err
    assert main(["export", str(run), "--format", "ragas", "-o", str(run)]) == 2
    assert "is the run's output itself" in capsys.readouterr().err
    with run.open("a", encoding="utf-8") as lines:
        lines.write(json.dumps({"id": "x", "question": "Why?", "error": "ValueError: boom"}) + "\n")
    assert main(["export", str(run), "--format", "deepeval", "-o", str(out)]) == 0
    assert "exported 7 queries as deepeval rows (0 with a reference; 1 failed queries left out)" in \
        capsys.readouterr().out


def test_the_export_example_runs_and_says_how_to_load_each_tool(tmp_path, capsys):
    import importlib.util as util

    spec = util.spec_from_file_location("export_for_eval_tools", ROOT / "examples" / "export_for_eval_tools.py")
    module = util.module_from_spec(spec)
    spec.loader.exec_module(module)
    said = module.main(tmp_path)
    assert len(read(tmp_path / "ragas.jsonl")) == 30 == len(read(tmp_path / "deepeval.jsonl"))
    for tool, line in zip(("ragas", "deepeval"), said):
        installed = importlib.util.find_spec(tool) is not None
        assert line.startswith(f"{tool}: ") if installed else f"pip install {tool}" in line, line
