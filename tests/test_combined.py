"""The fitted combination of evaluators, the evaluator table, and the training device switch."""

import io
import json

import pytest

from crag_shared import (
    CrossEncoderEvaluator,
    LexicalEvaluator,
    evaluator_from_spec,
    evaluator_spec,
    load_combination,
    save_combination,
)
from crag_shared.tools.cli import main
from crag_shared.tools.combine import fit_combination, logistic_regression
from crag_shared.tools.data import Pair

QUESTIONS = [
    ("what is henry feilden occupation", "henry feilden was an english conservative party politician", True),
    ("what is henry feilden occupation", "the eiffel tower stands in paris", False),
    ("who built the eiffel tower", "the eiffel tower was built in 1889 by gustave eiffel", True),
    ("who built the eiffel tower", "marie curie won the nobel prize twice", False),
    ("what did marie curie win", "marie curie was a physicist and chemist who won the nobel prize twice", True),
    ("what did marie curie win", "paris is the capital and largest city of france", False),
]


def pairs():
    return [Pair(q, p, y, q) for q, p, y in QUESTIONS]


def test_logistic_regression_recovers_a_separating_direction():
    rows = [[x, 0.1 * x] for x in (-1, -0.6, -0.2, 0.2, 0.6, 1)]
    weights = logistic_regression(rows, [0, 0, 1, 0, 1, 1], l2=1e-3)
    assert weights[1] > 0 and weights[1] > weights[2]


def test_fit_save_load_reproduces_scores(tiny_bert, tmp_path):
    members = [LexicalEvaluator(), CrossEncoderEvaluator(str(tiny_bert))]
    combined = fit_combination(members, pairs(), progress=False)
    assert combined.report["pairs"] == 6
    assert set(combined.report["member_pair_auroc"]) == {evaluator_spec(m) for m in members}
    path = tmp_path / "combined.json"
    save_combination(combined, path)
    assert json.loads(path.read_text())["members"] == ["lexical", f"cross-encoder:{tiny_bert}"]
    loaded = evaluator_from_spec(f"combined:{path}")
    texts = [p for _, p, _ in QUESTIONS]
    assert loaded.score(QUESTIONS[0][0], texts) == pytest.approx(combined.score(QUESTIONS[0][0], texts))
    assert loaded.thresholds == combined.thresholds and evaluator_spec(loaded) == f"combined:{path}"
    scores = loaded.score(QUESTIONS[0][0], texts)
    assert all(-1 <= s <= 1 for s in scores)
    assert loaded.score(QUESTIONS[0][0], texts[:1]) == pytest.approx(scores[:1])  # batch-independent
    (tmp_path / "bad.json").write_text('{"format": 99}')
    with pytest.raises(ValueError, match="not a crag combination file"):
        evaluator_from_spec(f"combined:{tmp_path / 'bad.json'}")


def test_a_format_1_file_keeps_the_sentence_unit_its_embedding_was_fitted_with(tiny_bert, tmp_path):
    saved = {"format": 1, "members": ["lexical", f"onnx-embedding:{tiny_bert}"], "weights": [1.0, 2.0],
             "bias": -0.5, "thresholds": [0.0, -0.8]}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(saved))
    old = load_combination(path)
    assert old.members[1].unit == "sentence"
    assert evaluator_spec(old.members[1]) == f"onnx-embedding-sentence:{tiny_bert}"
    path.write_text(json.dumps({**saved, "format": 2}))
    assert load_combination(path).members[1].unit == "matched"
    save_combination(old, tmp_path / "resaved.json")
    assert load_combination(tmp_path / "resaved.json").members[1].unit == "sentence"


def test_fit_combination_cli(tmp_path, capsys):
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps({"query": q, "passage": p, "label": y}) + "\n" for q, p, y in QUESTIONS))
    out = tmp_path / "c.json"
    assert main(["fit-combination", "--data", str(data), "--member", "lexical", "--out", str(out)]) == 0
    assert "written" in capsys.readouterr().out and json.loads(out.read_text())["members"] == ["lexical"]


@pytest.mark.slow
def test_evaluator_table_over_the_bench_sets(bench_dir):
    from benchmarks.accuracy import table

    out = io.StringIO()
    results = table(out, bench_dir, ["lexical"])
    assert set(results["lexical"]) == {"PopQA text", "PopQA titles", "qa_pairs eval", "qa_pairs eval, hard negatives"}
    assert results["lexical"]["PopQA titles"]["pair_auroc"] > 0.95
    assert out.getvalue().count("\n") == 3 and "| lexical |" in out.getvalue()


def test_device_choice_and_fallback(monkeypatch):
    import torch

    from crag_shared.evaluators.hf import pick_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert pick_device("auto") in ("cpu", "mps") and pick_device("cpu") == "cpu"
    with pytest.raises(ValueError, match="no CUDA GPU"):
        pick_device("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert pick_device("auto") == "cuda"


def test_train_evaluator_device_flag(tiny_bert, tmp_path, capsys, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps({"query": q, "passage": p, "label": y}) + "\n" for q, p, y in QUESTIONS * 3))
    base = ["train-evaluator", "--data", str(data), "--base-model", str(tiny_bert), "--max-steps", "2",
            "--eval-every", "2", "--validation", "0.3"]
    assert main([*base, "--out", str(tmp_path / "cpu"), "--device", "cpu"]) == 0
    assert json.loads((tmp_path / "cpu" / "training_report.json").read_text())["config"]["device"] == "cpu"
    assert main([*base, "--out", str(tmp_path / "gpu"), "--device", "cuda"]) == 2
    assert "no CUDA GPU" in capsys.readouterr().err


def test_the_shipped_combination_loads_by_name_and_takes_local_members(tiny_bert, tmp_path):
    from crag_shared.evaluators import SHIPPED_COMBINATIONS, LexicalEvaluator

    shipped = evaluator_from_spec("combined:lexical-minilm")
    assert evaluator_spec(shipped) == "combined:lexical-minilm"
    assert evaluator_from_spec(evaluator_spec(shipped)).weights == shipped.weights
    assert isinstance(shipped.members[0], LexicalEvaluator) and all(w > 0 for w in shipped.weights)
    assert shipped.thresholds == (0.0, -0.8)  # probability 0.5 and 0.1, not the fitting set's Eq. 2 choice
    local = load_combination(SHIPPED_COMBINATIONS / "lexical-minilm.json",
                                   members=["lexical", f"cross-encoder:{tiny_bert}"])
    assert isinstance(local.members[1], CrossEncoderEvaluator) and local.weights == shipped.weights
    save_combination(local, tmp_path / "mine.json")
    mine = evaluator_from_spec(evaluator_spec(local))
    assert evaluator_spec(mine.members[1]) == f"cross-encoder:{tiny_bert}"
    assert mine.score("capital of france", ["paris is the capital", "x"]) == pytest.approx(
        local.score("capital of france", ["paris is the capital", "x"]))
    with pytest.raises(ValueError, match="1 member specs given for 2"):
        load_combination(SHIPPED_COMBINATIONS / "lexical-minilm.json", members=["lexical"])
