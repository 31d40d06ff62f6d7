"""Thresholds from the questions and answers a user keeps, on the passages their own retriever returns.

Each retrieved passage is labelled by whether it holds a gold answer (`holds_answer`); a question whose
passages include an answer and at least `least` that do not also yields a near-miss query of those alone
(`near_misses`: the right neighbourhood without the answer, which should not be judged Correct); then
Eq. 2 is fitted. The figures a user chooses by are in `tradeoff`: for each upper threshold, how many
questions keep their answer and how many near misses (and answerless questions) are passed on.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Protocol

from ..evaluators.base import RetrievalEvaluator
from ..evaluators.spec import describe
from ..policy import ActionPolicy
from ..trace import log
from ..types import Judgment, Passage
from .answers import QAPair, holds_answer, qa_pair, read_qa, weak_answers
from .eq2 import Calibration, equation_2, fit_thresholds

#: A question needs at least this many retrieved passages without an answer (beside one with it) to yield
#: a near-miss query, as `crag calibrate --near-misses` has it.
NEAR_MISS_LEAST = 3


def near_misses(labels: Sequence[bool], texts: Sequence[str], least: int = NEAR_MISS_LEAST) -> list[int]:
    """The positions of a query's near misses: its passages without the answer, when it has one with the
    answer and at least `least` without; else none."""
    misses = [i for i, (label, text) in enumerate(zip(labels, texts)) if not label and text.strip()]
    return misses if any(labels) and len(misses) >= least else []


#: A calibration query: a question with an answering passage, its near misses alone, or a question no retrieved
#: passage answers.
QueryKind = Literal["answerable", "near_miss", "no_answer"]


@dataclass(frozen=True)
class JudgedQuery:
    """One query Eq. 2 is fitted on: a question (its passages labelled by answer) or a question's near misses."""

    id: str
    question: str
    kind: QueryKind
    scores: list[float]
    labels: list[bool]


@dataclass(frozen=True)
class TradeOff:
    """At one upper threshold: questions whose answer passage reaches it (their answer is handed on), near
    misses and answerless questions whose best passage reaches it (passed on as if relevant)."""

    upper: float
    answers_kept: int
    near_misses_passed: int
    no_answer_passed: int


@dataclass
class QACalibration:
    """The fitted thresholds (`calibration.policy`), every query they were fitted on, and the trade-off.
    `notes` say what in the inputs weakens the fit (answers too common to label passages by); `warnings`
    adds what weakens the chosen thresholds."""

    calibration: Calibration
    evaluator: str
    queries: list[JudgedQuery]
    tradeoff: list[TradeOff] = field(default_factory=list)
    chosen_by: str = "Eq. 2"
    notes: list[str] = field(default_factory=list)
    #: The share of answers the thresholds should keep: under it, `warnings` says so, with the budget that keeps it.
    keep_answers: float = 0.8

    @property
    def thresholds(self) -> tuple[float, float]:
        """(upper, lower), as `thresholds_path` loads them."""
        return self.calibration.policy.upper, self.calibration.policy.lower

    def count(self, kind: str) -> int:
        """How many queries of this kind: "answerable", "near_miss" or "no_answer"."""
        return sum(1 for q in self.queries if q.kind == kind)

    @property
    def no_answer(self) -> list[str]:
        """The questions none of whose retrieved passages holds an answer (counted as negatives)."""
        return [q.question for q in self.queries if q.kind == "no_answer"]

    def choose(self, near_misses: float) -> QACalibration:
        """This calibration with the upper threshold that keeps the most answers while passing on at most this
        share of the near-miss queries (the lowest such upper in the trade-off table); the lower threshold
        stays Eq. 2's, or drops to the new upper. For when Eq. 2's single number is not the trade-off you want."""
        if not 0.0 <= near_misses <= 1.0:
            raise ValueError(f"near_misses must be a share in [0, 1], got {near_misses!r}")
        total = max(1, self.count("near_miss"))
        upper = min(row.upper for row in self.tradeoff if row.near_misses_passed / total <= near_misses)
        lower = min(self.calibration.policy.lower, upper)
        objective, counts, accuracy = equation_2([max(q.scores, default=-1.0) for q in self.queries],
                                                 [any(q.labels) for q in self.queries], upper, lower,
                                                 self.calibration.alpha)
        chosen = replace(self.calibration, policy=ActionPolicy(upper, lower), objective=objective, actions=counts,
                         accuracy=accuracy)
        return QACalibration(chosen, self.evaluator, self.queries, self.tradeoff, chosen_by=f"near misses passed on "
                             f"at most {near_misses:.0%}", notes=self.notes, keep_answers=self.keep_answers)

    @property
    def warnings(self) -> list[str]:
        """What to know before using these thresholds: the `notes` on the inputs, and, when the thresholds
        keep under `keep_answers` of the answers, that figure with the `near_miss_budget` that keeps that share."""
        kept = self._few_answers_kept()
        return [*self.notes, *([kept] if kept else [])]

    def _few_answers_kept(self) -> str | None:
        answerable, near, share = self.count("answerable"), self.count("near_miss"), self.keep_answers
        row = next((r for r in self.tradeoff if r.upper == self.thresholds[0]), None)
        if row is None or row.answers_kept >= share * answerable - 1e-9:
            return None
        said = (f"the thresholds keep {row.answers_kept} of {answerable} answers "
                f"({row.answers_kept / answerable:.0%}, under the {share:.0%} asked for; upper {row.upper:+.2f})")
        # the highest upper keeping that share of the answers passes on the fewest near misses that do
        enough = max((r for r in self.tradeoff if r.answers_kept >= share * answerable - 1e-9), key=lambda r: r.upper,
                     default=None)
        if enough is None:
            return said
        budget = math.ceil(round(100 * enough.near_misses_passed / max(1, near), 6)) / 100
        better = self.choose(budget)
        kept = next(r for r in better.tradeoff if r.upper == better.thresholds[0])
        return (f"{said}: near_miss_budget={budget:g} (--near-miss-budget {budget:g}) keeps {kept.answers_kept} "
                f"({kept.answers_kept / answerable:.0%}; upper {kept.upper:+.2f}), passing on "
                f"{kept.near_misses_passed} of {near} near misses")

    def summary(self) -> dict[str, Any]:
        """The thresholds file's content: `upper`/`lower` (what `thresholds_path` reads), Eq. 2, the counts
        and the trade-off table."""
        upper, lower = self.thresholds
        return {"upper": upper, "lower": lower, "chosen_by": self.chosen_by, "objective": self.calibration.objective,
                "alpha": self.calibration.alpha, "evaluator": self.evaluator, "source": "question-answer pairs",
                "questions": self.count("answerable") + self.count("no_answer"),
                "answerable": self.count("answerable"), "no_answer": self.count("no_answer"),
                "near_miss_queries": self.count("near_miss"), "actions": self.calibration.actions,
                "warnings": self.warnings, "tradeoff": [asdict(t) for t in self.tradeoff]}

    def save(self, path: str | Path) -> None:
        """Write the thresholds file (JSON; `ActionPolicy.load` and every adapter's `thresholds_path` read it)."""
        Path(path).write_text(json.dumps(self.summary(), indent=2) + "\n", encoding="utf-8")

    def records(self) -> list[dict[str, Any]]:
        """One JSON-ready line per query (id, question, kind, scores, labels, the fitted thresholds), the input
        `crag report` draws the trade-off curve from."""
        upper, lower = self.thresholds
        return [{**asdict(q), "thresholds": {"upper": upper, "lower": lower}} for q in self.queries]


class Judge(Protocol):
    """What thresholds are fitted with: a `Corrector`, whose `judge` scores passages exactly as `correct` does
    (its evaluator, its `score_titles`, empty passages skipped), so the thresholds are fitted on the scores
    they are used on."""

    evaluator: RetrievalEvaluator

    def judge(self, query: str, passages: Sequence[str | Passage], *, policy: ActionPolicy | None = None
              ) -> Judgment:
        """Score the passages and decide the action."""
        ...


def judged_scores(judge: Judge, question: str, passages: Sequence[Passage]) -> Judgment:
    """`judge.judge(question, passages)`, refused when its evaluator failed and a fallback scored instead (a
    fallback's scores would fit thresholds for the wrong evaluator) or when it scored nothing."""
    judgment = judge.judge(question, passages)
    failed = [f for f in judgment.trace.fallbacks if f.step == "evaluate"]
    if failed:
        raise ValueError(f"the evaluator failed while calibrating on {question!r}: {failed[0].reason}")
    if passages and not judgment.scores:
        raise ValueError(f"{question!r} was not judged ({judgment.action.value}): nothing to calibrate on")
    if len(judgment.scores) != len(passages):
        raise ValueError(f"evaluator {describe(judge.evaluator)} gave {len(judgment.scores)} scores for the "
                         f"{len(passages)} passages of {question!r}: need one score per passage")
    return judgment


def judged_queries(judge: Judge, qa: Sequence[QAPair], retrieved: Sequence[Sequence[Passage]], *,
                   progress: bool = True, least: int = NEAR_MISS_LEAST) -> list[JudgedQuery]:
    """Score each question's passages with `judge` (a `Corrector`: one `judge` call per question, with a
    progress bar), label them by answer, and add each question's near-miss query."""
    from tqdm.auto import tqdm

    if len(qa) != len(retrieved):
        raise ValueError(f"{len(qa)} questions but {len(retrieved)} lists of retrieved passages")
    queries: list[JudgedQuery] = []
    for number, (pair, passages) in enumerate(tqdm(list(zip(qa, retrieved)), desc="scoring", unit="question",
                                                   disable=not progress)):
        question_id = pair.id or str(number)
        scores = list(judged_scores(judge, pair.question, passages).scores) if passages else []
        labels = [holds_answer(p.text or "", pair.answers) for p in passages]
        kind: QueryKind = "answerable" if any(labels) else "no_answer"
        queries.append(JudgedQuery(question_id, pair.question, kind, scores, labels))
        missed = near_misses(labels, [p.text or "" for p in passages], least)
        if missed:
            queries.append(JudgedQuery(f"{question_id}#near-miss", pair.question, "near_miss",
                                       [scores[i] for i in missed], [False] * len(missed)))
    return queries


def tradeoff(queries: Sequence[JudgedQuery], uppers: Iterable[float]) -> list[TradeOff]:
    """For each upper threshold, the questions that keep their answer and the queries passed on wrongly."""
    rows = []
    for upper in uppers:
        kept = sum(1 for q in queries if q.kind == "answerable"
                   and max(s for s, y in zip(q.scores, q.labels) if y) >= upper)
        near = sum(1 for q in queries if q.kind == "near_miss" and max(q.scores) >= upper)
        none = sum(1 for q in queries if q.kind == "no_answer" and q.scores and max(q.scores) >= upper)
        rows.append(TradeOff(round(upper, 4), kept, near, none))
    return rows


def calibrate_qa(judge: Judge, qa: Iterable[object] | str | Path,
                 retrieve: Callable[[str], Sequence[Passage | str]] | Sequence[Sequence[Passage | str]], *,
                 evaluator_name: str | None = None, alpha: float = 1.0, steps: int = 201, progress: bool = True,
                 near_miss_budget: float | None = None, out: str | Path | None = None,
                 keep_answers: float = 0.8) -> QACalibration:
    """Fit the thresholds from question–answer pairs, scoring with `judge`: a `Corrector` (for example
    `Corrector(evaluator, score_titles=True)`), which scores each passage as it does when it corrects.
    `retrieve(question)` gives each question's passages (or pass the lists, in the order of `qa`; a passage
    may be plain text). `qa` is a JSONL path (`read_qa`) or holds `QAPair`s, `(question, answers)` tuples or
    `{"question", "answers"}` dicts. `evaluator_name` (default: the judge's evaluator as it describes
    itself) is what the thresholds file says fitted them. With `near_miss_budget`, the upper threshold is
    `choose(near_miss_budget)`'s instead of Eq. 2's. With `out`, the thresholds file is written there. Each
    of the result's `warnings` (answers too common to label passages by; thresholds that keep under
    `keep_answers` of the answers, 80 % by default) is logged on the "crag" logger, and saved in the thresholds
    file."""
    if not 0.0 < keep_answers <= 1.0:
        raise ValueError(f"keep_answers must be a share in (0, 1], got {keep_answers!r}")
    pairs = read_qa(qa) if isinstance(qa, (str, Path)) else [qa_pair(v, f"qa[{i}]") for i, v in enumerate(qa)]
    if not pairs:
        raise ValueError("no question-answer pairs to calibrate on")
    notes = _weak_answer_notes(pairs)
    found = [retrieve(p.question) for p in pairs] if callable(retrieve) else retrieve
    retrieved = [[Passage(p) if isinstance(p, str) else p for p in passages] for passages in found]
    queries = judged_queries(judge, pairs, retrieved, progress=progress)
    if not any(q.kind == "answerable" for q in queries):
        raise ValueError(f"none of the {len(pairs)} questions has a retrieved passage holding its answer: check "
                         "the answers and the retriever (is it the index the questions are about?)")
    calibration = fit_thresholds([q.scores for q in queries], [q.labels for q in queries], alpha=alpha, steps=steps)
    grid = [round(-1 + i / 20, 2) for i in range(41)]
    uppers = sorted({*grid, calibration.policy.upper})
    name = evaluator_name if evaluator_name is not None else describe(judge.evaluator)
    result = QACalibration(calibration, name, queries, tradeoff(queries, uppers), notes=notes,
                           keep_answers=keep_answers)
    if near_miss_budget is not None:
        result = result.choose(near_miss_budget)
    for warning in result.warnings:
        log(logging.WARNING, "crag calibration: {warning}", warning=warning)
    if out is not None:
        result.save(out)
    return result


def _weak_answer_notes(pairs: Sequence[QAPair]) -> list[str]:
    """The note naming the answers too common to label passages by (`weak_answers`), if there are any."""
    weak = weak_answers(pairs)
    if not weak:
        return []
    named = ", ".join(f"{answer!r} ({question[:60]})" for question, answer in weak[:5])
    more = f" and {len(weak) - 5} more" if len(weak) > 5 else ""
    return [f"{len(weak)} answer(s) too common to label passages by (one character, or only stopwords): "
            f"{named}{more}: any passage holding one is labelled as holding the answer; give such answers in "
            "full, or leave them out"]


def objective_on(queries: Sequence[JudgedQuery], thresholds: tuple[float, float], alpha: float = 1.0
                 ) -> tuple[float, float]:
    """(Eq. 2, judgment accuracy) of `thresholds` on these queries: how a fitted pair does on held-out ones."""
    objective, _, accuracy = equation_2([max(q.scores, default=-1.0) for q in queries],
                                        [any(q.labels) for q in queries], *thresholds, alpha=alpha)
    return objective, accuracy
