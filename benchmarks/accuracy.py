"""`crag-bench accuracy`: how well evaluators judge retrieval, per pair and per query, next to baselines."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from crag_shared.calibration import equation_2
from crag_shared.policy import ActionPolicy
from crag_shared.tools.calibrate import score_by_query
from crag_shared.tools.data import Pair, auroc, by_query, kfold_by_query


def figures(scores: Sequence[Sequence[float]], labels: Sequence[Sequence[bool]], policy: ActionPolicy) -> dict:
    """Pair AUROC; pair accuracy and F1 of the relevant class (relevant = score ≥ upper); query-level
    judgment accuracy (Correct ⇔ any passage relevant); action counts; Eq. 2 at these thresholds."""
    flat = [(s, y) for row, ys in zip(scores, labels) for s, y in zip(row, ys)]
    predicted = [(s >= policy.upper, y) for s, y in flat]
    tp = sum(p and y for p, y in predicted)
    fp = sum(p and not y for p, y in predicted)
    fn = sum(not p and y for p, y in predicted)
    f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
    decisions = [policy.decide(row).value for row in scores]
    judged = [(d == "correct") == any(ys) for d, ys in zip(decisions, labels)]
    objective, counts, _ = equation_2([max(r, default=-1.0) for r in scores], [any(ys) for ys in labels],
                                      policy.upper, policy.lower)
    return {"pair_auroc": auroc([s for s, _ in flat], [y for _, y in flat]),
            "pair_accuracy": sum(p == y for p, y in predicted) / len(predicted), "pair_f1": f1,
            "query_accuracy": sum(judged) / len(judged), "actions": counts, "eq2": objective,
            "thresholds": (policy.upper, policy.lower), "pairs": len(flat), "queries": len(scores)}


def baselines(pairs: Sequence[Pair]) -> dict:
    """Figures of simple judges (word overlap) beside the evaluators, on the same pairs."""
    groups = list(by_query(pairs).values())
    positive_queries = sum(any(p.relevant for p in g) for g in groups)
    return {"always_correct_query_accuracy": positive_queries / len(groups),
            "always_irrelevant_pair_accuracy": sum(not p.relevant for p in pairs) / len(pairs)}


def kfold_figures(pairs: Sequence[Pair], k: int, base_model: str, steps: int, policy: ActionPolicy | None,
                  progress: bool = True) -> dict:
    """In-domain figure: train on k-1 folds (by question), score the held-out fold, pool the scores."""
    from crag_shared.evaluators.cross_encoder import CrossEncoderEvaluator
    from crag_shared.tools.train import TrainConfig, train_evaluator

    scores: list[list[float]] = []
    labels: list[list[bool]] = []
    for i, (train, test) in enumerate(kfold_by_query(pairs, k)):
        with tempfile.TemporaryDirectory() as out:
            config = TrainConfig(base_model=base_model, out=out, max_steps=steps, eval_every=steps, eval_limit=0,
                                 seed=i)
            train_evaluator(train, [], config, progress=progress, log=lambda _: None)
            fold_scores, fold_labels = score_by_query(CrossEncoderEvaluator(out), test, progress=False)
        scores += fold_scores
        labels += fold_labels
    return figures(scores, labels, policy or ActionPolicy(0.0, -0.5))


def report(name: str, values: dict, out: TextIO) -> None:
    """Print one evaluator's figures."""
    actions = ", ".join(f"{k} {v}" for k, v in values["actions"].items())
    out.write(f"  {name}\n    pair AUROC {values['pair_auroc']:.3f} | pair accuracy {values['pair_accuracy']:.3f} | "
              f"pair F1 {values['pair_f1']:.3f} | query accuracy {values['query_accuracy']:.3f} | "
              f"Eq.2 {values['eq2']:.3f} at (upper {values['thresholds'][0]:+.2f}, lower "
              f"{values['thresholds'][1]:+.2f}) | actions: {actions}\n")


def run(out: TextIO, data: str, evaluators: Sequence[str], *, thresholds: str | None = None, kfold: int = 0,
        base_model: str | None = None, train_steps: int = 100, progress: bool = True,
        split: str | None = None, titles: bool = False) -> dict:
    """Evaluate each evaluator on labelled pairs (and k folds if asked); print and return the figures."""
    from crag_shared.evaluators import evaluator_from_spec
    from crag_shared.tools.data import load_pairs

    pairs = load_pairs(data, titles=titles, split=split)
    base = baselines(pairs)
    where = f"{data} (split {split})" if split else data
    where += ", passages scored as 'title: text'" if titles else ""
    out.write(f"crag-bench accuracy on {where}: {len(pairs)} pairs, {len(by_query(pairs))} queries\n"
              f"  baselines: always Correct -> query accuracy {base['always_correct_query_accuracy']:.3f}; "
              f"every pair irrelevant -> pair accuracy {base['always_irrelevant_pair_accuracy']:.3f}\n")
    results = {"baselines": base}
    for spec in evaluators:
        evaluator = evaluator_from_spec(spec)
        policy = ActionPolicy.load(thresholds) if thresholds else ActionPolicy.for_evaluator(evaluator)
        scores, labels = score_by_query(evaluator, pairs, progress=progress)
        results[spec] = figures(scores, labels, policy)
        report(spec, results[spec], out)
    if kfold:
        if not base_model:
            raise ValueError("--kfold needs --base-model to train from")
        fold_policy = ActionPolicy.load(thresholds) if thresholds else None
        results["kfold"] = kfold_figures(pairs, kfold, base_model, train_steps, fold_policy, progress)
        report(f"{kfold}-fold by question, cross-encoder trained from {base_model} ({train_steps} steps per fold)",
               results["kfold"], out)
    return results


#: qa_pairs negatives that share the question's topic or words: the hard part of "does it hold the answer"
HARD_NEGATIVES = frozenset({"same_article_top_overlap", "own_paragraph_unanswerable", "distractor_paragraph"})


def benchmark_sets(bench: Path) -> dict[str, list[Pair]]:
    """The four data sets of the evaluator table, read from the bench directory."""
    from crag_shared.tools.data import load_pairs

    popqa, qa = bench / "popqa_ctxs.jsonl", bench / "qa_pairs.jsonl"
    qa_eval = load_pairs(qa, split="eval")
    return {"PopQA text": load_pairs(popqa), "PopQA titles": load_pairs(popqa, titles=True),
            "qa_pairs eval": qa_eval,
            "qa_pairs eval, hard negatives": [p for p in qa_eval if p.relevant or p.kind in HARD_NEGATIVES]}


def table(out: TextIO, bench: Path, evaluators: Sequence[str], *, progress: bool = False) -> dict:
    """One table: every evaluator × the four sets, pair AUROC, and query-level judgment accuracy at the
    evaluator's own thresholds."""
    from crag_shared.evaluators import evaluator_from_spec

    sets = benchmark_sets(bench)
    names = list(sets)
    out.write("| evaluator | " + " | ".join(f"{n} AUROC" for n in names) + " | PopQA query accuracy (text / titles) |\n"
              + "|---" * (len(names) + 2) + "|\n")
    results: dict[str, dict[str, dict]] = {}
    for spec in evaluators:
        evaluator = evaluator_from_spec(spec)
        policy = ActionPolicy.for_evaluator(evaluator)
        results[spec] = {name: figures(*score_by_query(evaluator, pairs, progress=progress), policy)
                         for name, pairs in sets.items()}
        row = results[spec]
        out.write(f"| {spec} | " + " | ".join(f"{row[n]['pair_auroc']:.3f}" for n in names)
                  + f" | {row['PopQA text']['query_accuracy']:.3f} / {row['PopQA titles']['query_accuracy']:.3f} |\n")
    return results
