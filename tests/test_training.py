"""Tools for your own data: Eq. 2 calibration, evaluator training, the accuracy benchmark."""

import io
import json
import random

import pytest

from crag_shared import ActionPolicy, CrossEncoderEvaluator, LexicalEvaluator, T5Evaluator
from crag_shared.calibration import equation_2, fit_thresholds
from crag_shared.tools.cli import main
from crag_shared.tools.data import Pair, auroc, kfold_by_query, load_pairs, split_by_query


def synthetic(seed=0):
    """Best scores per query with a unique optimum region under Eq. 2 (see the assertions)."""
    rng = random.Random(seed)
    groups = [(0.7, True, 50), (-0.2, True, 10), (-0.8, False, 50), (0.1, False, 6)]
    scores, labels = [], []
    for best, positive, count in groups:
        for _ in range(count):
            others = [rng.uniform(-1, min(best, -0.9)) for _ in range(4)]
            scores.append([best, *others])
            labels.append([positive] + [False] * 4)
    return scores, labels


def test_equation_2_by_hand():
    best, positive = [0.9, 0.9, -0.95, 0.0, 0.95], [True, False, False, True, False]
    objective, counts, accuracy = equation_2(best, positive, upper=0.5, lower=-0.5)
    # TP 1, FP 2 (0.9 and 0.95 negatives), TN 1, one ambiguous positive (0.0): (1 + 1 + 0.5) / 5 - 2 / 3
    assert objective == pytest.approx(2.5 / 5 - 2 / 3)
    assert counts == {"correct": 3, "incorrect": 1, "ambiguous": 1} and accuracy == pytest.approx(2 / 5)


def test_calibration_recovers_the_known_optimum():
    scores, labels = synthetic()
    result = fit_thresholds(scores, labels, alpha=1.0)
    assert 0.1 < result.policy.upper <= 0.7  # above the negatives' 0.1, at most the positives' 0.7
    assert -0.8 < result.policy.lower <= -0.2  # above the negatives' -0.8, keeping -0.2 ambiguous
    assert result.actions == {"correct": 50, "incorrect": 50, "ambiguous": 16}
    brute = max(equation_2([max(s) for s in scores], [any(y) for y in labels], up / 100, low / 100)[0]
                for up in range(-100, 101, 5) for low in range(-100, up + 1, 5))
    assert result.objective >= brute - 1e-9


def test_calibrate_cli_writes_loadable_json_and_png(tmp_path):
    # pairs whose lexical scores are unimportant: the CLI path is what is tested
    data = tmp_path / "pairs.jsonl"
    with data.open("w") as f:
        for q in range(12):
            for j in range(3):
                f.write(json.dumps({"query": f"who founded the city number {q}",
                                    "passage": f"the city number {q} was founded by someone" if j == 0 else "x y z",
                                    "label": j == 0, "query_id": str(q)}) + "\n")
    out, png = tmp_path / "t.json", tmp_path / "t.png"
    assert main(["calibrate", "--data", str(data), "--out", str(out), "--plot", str(png), "--steps", "41"]) == 0
    policy = ActionPolicy.load(out)
    assert -1 <= policy.lower <= policy.upper <= 1
    assert json.loads(out.read_text())["evaluator"] == "default"  # the CLI's default spec, recorded as given
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_pairs_formats_and_splits(tmp_path, bench_dir):
    popqa = load_pairs(bench_dir / "popqa_ctxs.jsonl")
    assert len(popqa) == 1000 and sum(p.relevant for p in popqa) == 165
    train, held = split_by_query(popqa, 0.2)
    assert not {p.query_id for p in train} & {p.query_id for p in held} and held
    folds = kfold_by_query(popqa, 5)
    assert sorted(p.query_id for _, test in folds for p in test) == sorted(p.query_id for p in popqa)
    path = tmp_path / "bad.jsonl"
    path.write_text('{"query": "q", "passage": "p", "label": "maybe"}\n')
    with pytest.raises(ValueError, match=r"bad\.jsonl:1"):
        load_pairs(path)
    path.write_text("\n")
    with pytest.raises(ValueError, match=r"bad\.jsonl: no pairs$"):
        load_pairs(path)


def test_titles_read_passages_as_the_corrector_scores_them(tmp_path, bench_dir):
    from crag_shared import Corrector, Passage

    titled = load_pairs(bench_dir / "popqa_ctxs.jsonl", titles=True)
    assert titled[0].passage.startswith("Henry Feilden (Conservative politician): ")
    path = tmp_path / "pairs.jsonl"
    path.write_text(json.dumps({"query": "q", "passage": "He was elected.", "title": "Ann Bo", "label": 1}) + "\n"
                    + json.dumps({"query": "q", "passage": "Ann Bo is here.", "title": "Ann Bo", "label": 0}) + "\n")
    assert [p.passage for p in load_pairs(path, titles=True)] == ["Ann Bo: He was elected.", "Ann Bo is here."]
    seen = []

    class Recording(LexicalEvaluator):
        def evaluate(self, query, texts):
            seen.extend(texts)
            return super().evaluate(query, texts)

    Corrector(evaluator=Recording(), score_titles=True).judge("q", [Passage("He was elected.", title="Ann Bo")])
    assert seen == ["Ann Bo: He was elected."]


def test_a_single_training_split_is_split_by_query():
    pairs = [Pair(f"q{i}", "p", bool(i % 2), str(i), "train") for i in range(200)]
    train, held = split_by_query(pairs, 0.2)
    assert held and train and not {p.query_id for p in train} & {p.query_id for p in held}
    mixed = [*pairs, Pair("q", "p", True, "x", "eval")]
    assert [p.query_id for p in split_by_query(mixed)[1]] == ["x"]  # a held-out split is used as given


def test_listwise_loss_ranks_within_each_question_only():
    torch = pytest.importorskip("torch")
    from crag_shared.tools.train import listwise_loss

    targets, queries = [1.0, -1.0, -1.0, 1.0, -1.0], ["a", "a", "a", "b", "b"]
    right = listwise_loss(torch.tensor([0.9, -0.5, -0.6, 0.2, 0.1]), targets, queries, 0.3)
    wrong = listwise_loss(torch.tensor([-0.5, 0.9, -0.6, 0.2, 0.1]), targets, queries, 0.3)
    assert right < wrong
    # question b's negative outscoring question a's positive does not matter: rankings are per question
    assert listwise_loss(torch.tensor([0.3, 0.0, 0.0, 0.9, 0.8]), targets, queries, 0.3) < wrong
    assert float(listwise_loss(torch.tensor([0.5, 0.1]), [1.0, 1.0], ["a", "a"], 0.3)) == 0.0  # no negatives


def test_auroc():
    assert auroc([0.9, 0.8, 0.1], [True, False, False]) == 1.0
    assert auroc([0.5, 0.5], [True, False]) == 0.5
    assert auroc([1.0], [True]) != auroc([1.0], [True])  # nan with one class


def overfit_pairs(n=32):
    return [Pair(f"what is the capital of place {i}", f"the capital of place {i} is city {i}" if i % 2 else
                 "bananas are yellow and grow in bunches", bool(i % 2), str(i)) for i in range(n)]


@pytest.mark.slow
@pytest.mark.parametrize("kind,pooling", [("bert", "pair"), ("bert", "mean"), ("t5", "cls")])
def test_training_lowers_the_loss_and_the_model_reloads(kind, pooling, tmp_path):
    from crag_shared.testing import build_bert_evaluator, build_t5_evaluator
    from crag_shared.tools.train import TrainConfig, train_evaluator

    pairs = overfit_pairs()
    texts = [p.query + " " + p.passage for p in pairs]
    base = (build_bert_evaluator if kind == "bert" else build_t5_evaluator)(tmp_path / "base", texts)
    config = TrainConfig(base_model=str(base), out=str(tmp_path / "out"), kind=kind, pooling=pooling, max_steps=40,
                         batch_size=8, lr=1e-3, head_lr=1e-2, eval_every=10, warmup=0.0)
    report = train_evaluator(pairs, pairs[:16], config, progress=False, log=lambda _: None)
    assert report.history[-1]["loss"] < report.history[0]["loss"]
    assert report.steps == 40 and (tmp_path / "out" / "training_report.json").exists()
    evaluator = (CrossEncoderEvaluator if kind == "bert" else T5Evaluator)(str(tmp_path / "out"))
    scores = evaluator.score(pairs[1].query, [pairs[1].passage, pairs[0].passage])
    assert len(scores) == 2 and scores[0] > scores[1]  # it learned the toy task
    if kind == "bert":
        assert evaluator.model.config.crag_pooling == pooling and evaluator.score_map == "clip"


@pytest.mark.slow
def test_listwise_training_learns_the_ranking_within_questions(tmp_path):
    from crag_shared.testing import build_bert_evaluator
    from crag_shared.tools.train import TrainConfig, train_evaluator

    cities = ["paris", "rome", "oslo", "lima", "cairo", "delhi", "tokyo", "quito"]
    pairs = [Pair(f"what is the capital of country {i}", text, relevant, str(i))
             for i, city in enumerate(cities)
             for text, relevant in ((f"country {i} has its capital at {city}", True),
                                    (f"country {i} has rivers and many hills", False),
                                    (f"country {i} exports grain and wool", False))]
    base = build_bert_evaluator(tmp_path / "base", [p.query + " " + p.passage for p in pairs])
    config = TrainConfig(base_model=str(base), out=str(tmp_path / "out"), max_steps=40, batch_size=6, lr=1e-3,
                         head_lr=1e-2, eval_every=10, warmup=0.0, listwise=1.0)
    report = train_evaluator(pairs, pairs, config, progress=False, log=lambda _: None)
    assert report.history[-1]["loss"] < report.history[0]["loss"] and report.best_auroc > 0.9
    scores = CrossEncoderEvaluator(str(tmp_path / "out")).score(pairs[0].query, [p.passage for p in pairs[:3]])
    assert scores[0] > max(scores[1:])


@pytest.mark.slow
def test_accuracy_bench_on_a_small_fixture(tmp_path, tiny_bert):
    data = tmp_path / "fixture.jsonl"
    with data.open("w") as f:
        for p in overfit_pairs(24):
            f.write(json.dumps({"query": p.query, "passage": p.passage, "label": p.relevant,
                                "query_id": str(int(p.query_id) // 3)}) + "\n")
    from benchmarks.accuracy import run

    out = io.StringIO()
    results = run(out, str(data), ["lexical", f"cross-encoder:{tiny_bert}"], kfold=2, base_model=str(tiny_bert),
                  train_steps=3, progress=False)
    assert results["baselines"]["always_irrelevant_pair_accuracy"] == 0.5
    for key in ("lexical", f"cross-encoder:{tiny_bert}", "kfold"):
        assert 0 <= results[key]["pair_auroc"] <= 1 and 0 <= results[key]["query_accuracy"] <= 1
    assert "2-fold by question" in out.getvalue()


@pytest.mark.slow
def test_train_evaluator_cli_keeps_the_eval_split_unseen(tmp_path, tiny_bert, capsys):
    data = tmp_path / "pairs.jsonl"
    with data.open("w") as f:
        for p in overfit_pairs(40):
            split = "eval" if int(p.query_id) < 8 else "train"
            f.write(json.dumps({"query": p.query, "passage": p.passage, "label": p.relevant,
                                "question_id": p.query_id, "split": split}) + "\n")
    out = tmp_path / "trained"
    assert main(["train-evaluator", "--data", str(data), "--split", "train", "--base-model", str(tiny_bert),
                 "--out", str(out), "--max-steps", "3", "--eval-every", "3", "--validation", "0.25",
                 "--listwise", "0.5"]) == 0
    printed = capsys.readouterr().out
    counts = printed.split("training on ")[1].split(" (")[0]
    trained, validated = (int(n) for n in counts.split(" pairs, validating on "))
    assert trained + validated == 32 and validated > 0  # the 8 eval pairs were neither trained nor validated on
    assert json.loads((out / "training_report.json").read_text())["config"]["listwise"] == 0.5
    assert CrossEncoderEvaluator(str(out)).score("q", ["p"])
    assert main(["train-evaluator", "--data", str(data), "--split", "dev", "--base-model", str(tiny_bert),
                 "--out", str(out)]) == 2
    assert "no pairs with split 'dev'" in capsys.readouterr().err


def test_calibration_with_near_misses_judges_the_right_neighbourhood_without_the_answer_incorrect(tmp_path):
    from crag_shared.tools.calibrate import score_by_query, with_near_misses
    from crag_shared.tools.data import Pair

    pairs = []
    for q in range(20):
        question = f"Where was Person{q} Smith born?"
        pairs.append(Pair(question, f"Person{q} Smith was born in Town{q} in 1901.", True, str(q)))
        pairs += [Pair(question, f"Person{q} Smith {text}", False, str(q)) for text in (
            "moved to the capital and taught chemistry for many years.",
            "married a violinist; their daughter became a painter.",
            "retired from the university and wrote a memoir about the war.")]
    widened = with_near_misses(pairs)
    assert len(widened) == len(pairs) + 60 and {p.kind for p in widened[len(pairs):]} == {"near_miss"}
    evaluator = LexicalEvaluator(reads_answer=False)  # word overlap alone: near misses look relevant
    plain = fit_thresholds(*score_by_query(evaluator, pairs, progress=False))
    near = fit_thresholds(*score_by_query(evaluator, widened, progress=False))
    scores, _ = score_by_query(evaluator, widened[len(pairs):], progress=False)
    best_miss = max(max(s) for s in scores)
    assert plain.policy.upper <= best_miss < near.policy.upper  # only the widened fit turns them away
    out = tmp_path / "t.json"
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps({"query": p.query, "passage": p.passage, "label": p.relevant,
                                        "query_id": p.query_id}) + "\n" for p in pairs))
    assert main(["calibrate", "--data", str(data), "--out", str(out), "--plot", "", "--near-misses"]) == 0
    assert ActionPolicy.load(out).upper > -1
