"""`crag calibrate`: fit the two action thresholds to labelled data with the paper's Eq. 2."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from ..calibration import Calibration, Judge, judged_scores, near_misses
from ..corrector.checks import checked_scores
from ..corrector.protocol import Failed
from ..evaluators.base import RetrievalEvaluator
from ..evaluators.spec import describe
from ..types import Passage, Trace
from .data import Pair, by_query


def with_near_misses(pairs: Sequence[Pair], least: int = 3) -> list[Pair]:
    """`pairs` plus, for every query with a relevant passage and at least `least` that are not, a negative
    query of those alone (query id `ID#near-miss`): the right neighbourhood without the answer, which Eq. 2
    should then judge Incorrect, not only off-topic retrieval."""
    added = []
    for query_id, group in by_query(pairs).items():
        misses = near_misses([p.relevant for p in group], [p.passage for p in group], least)
        added += [replace(group[i], query_id=f"{query_id}#near-miss", kind="near_miss") for i in misses]
    return [*pairs, *added]


def score_by_query(evaluator: RetrievalEvaluator, pairs: Sequence[Pair], *, progress: bool = True
                   ) -> tuple[list[list[float]], list[list[bool]]]:
    """One evaluator call per query (all its passages in one batch), with a progress bar: the evaluator's
    own scores of the pairs as read, for pair AUROC and fitting a combination's weights. Its output is
    checked as the Corrector checks it: too few or too many scores raise, naming the evaluator and the
    counts, and so do NaN scores (a failed evaluator fits nothing)."""
    from tqdm.auto import tqdm

    scores, labels = [], []
    for group in tqdm(list(by_query(pairs).values()), desc="scoring", unit="query", disable=not progress):
        texts = [p.passage for p in group]
        checked = checked_scores(evaluator, evaluator.evaluate(group[0].query, texts), len(texts), Trace())
        if isinstance(checked, Failed):
            raise ValueError(f"evaluator {describe(evaluator)} failed on {group[0].query!r}: {checked.error}")
        scores.append(checked.scores)
        labels.append([p.relevant for p in group])
    return scores, labels


def judge_by_query(judge: Judge, pairs: Sequence[Pair], *, progress: bool = True
                   ) -> tuple[list[list[float]], list[list[bool]]]:
    """Each query's passages scored by `judge` (a `Corrector`: one `judge` call per query, scoring each
    passage with its title as the Corrector does under `score_titles`), with a progress bar: the scores
    thresholds are fitted on."""
    from tqdm.auto import tqdm

    scores, labels = [], []
    for group in tqdm(list(by_query(pairs).values()), desc="scoring", unit="query", disable=not progress):
        passages = [Passage(p.passage, title=p.title) for p in group]
        scores.append(judged_scores(judge, group[0].query, passages).scores)
        labels.append([p.relevant for p in group])
    return scores, labels


def write_outputs(result: Calibration, evaluator_spec: str, scores: Sequence[Sequence[float]],
                  labels: Sequence[Sequence[bool]], json_path: str | Path, png_path: str | Path | None) -> dict:
    """Thresholds JSON (readable by `ActionPolicy.load` and every adapter's `thresholds_path`) and a PNG."""
    summary = {"upper": result.policy.upper, "lower": result.policy.lower, "objective": result.objective,
               "alpha": result.alpha, "evaluator": evaluator_spec, "queries": len(scores),
               "actions": result.actions, "accuracy": result.accuracy}
    Path(json_path).write_text(json.dumps(summary, indent=2) + "\n")
    if png_path:
        plot(result, scores, labels, png_path)
    return summary


def plot(result: Calibration, scores: Sequence[Sequence[float]], labels: Sequence[Sequence[bool]],
         path: str | Path) -> None:
    """Left: score histograms per label with the chosen thresholds. Right: Eq. 2 over the grid."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    flat = [(s, y) for row, ys in zip(scores, labels) for s, y in zip(row, ys)]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    bins = [i / 25 - 1 for i in range(51)]
    left.hist([s for s, y in flat if y], bins=bins, alpha=0.6, label="relevant passages", color="tab:green")
    left.hist([s for s, y in flat if not y], bins=bins, alpha=0.6, label="irrelevant passages", color="tab:red")
    for value, name, style in ((result.policy.upper, "upper", "-"), (result.policy.lower, "lower", "--")):
        left.axvline(value, color="black", linestyle=style, label=f"{name} = {value:+.2f}")
    left.set_xlabel("evaluator score")
    left.set_ylabel("passages")
    left.set_title("scores per label and the chosen thresholds")
    left.legend()
    grid = result.grid
    surface = [[v if not math.isnan(v) else float("nan") for v in row] for row in result.surface]
    image = right.imshow(surface, origin="lower", extent=(grid[0], grid[-1], grid[0], grid[-1]), aspect="auto",
                         cmap="viridis")
    right.plot([result.policy.lower], [result.policy.upper], "r*", markersize=14, label="maximum")
    right.set_xlabel("lower threshold")
    right.set_ylabel("upper threshold")
    right.set_title(f"Eq. 2 objective (alpha = {result.alpha:g}), max {result.objective:.3f}")
    right.legend(loc="lower right")
    fig.colorbar(image, ax=right)
    fig.tight_layout()
    fig.savefig(str(path), dpi=110)
    plt.close(fig)
