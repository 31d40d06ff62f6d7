"""`calibrate`: CRAG's thresholds fitted on your retriever, from the questions and answers you keep."""

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from haystack import Pipeline

from crag_shared.adapter import Passage, QACalibration, RetrievalEvaluator, calibrate_qa

from .components import CRAG
from .convert import to_passage


def _retrieve(source: Any, retriever: str | None, inputs: Callable[[str], dict[str, Any]] | None
              ) -> Callable[[str], list[Any]]:
    if isinstance(source, Pipeline):
        if retriever is None or retriever not in dict(source.walk()):
            names = ", ".join(name for name, _ in source.walk())
            raise ValueError(f"name the pipeline's retriever: retriever= one of {names} (got {retriever!r})")
        make = inputs or (lambda question: {"query": question})
        return lambda question: source.run(make(question), include_outputs_from={retriever})[retriever]["documents"]
    if not callable(getattr(source, "run", None)):
        raise TypeError(f"calibrate needs a Haystack retriever component or a Pipeline, got {type(source).__name__}")
    if inputs is not None:
        return lambda question: source.run(**inputs(question))["documents"]
    return lambda question: source.run(query=question)["documents"]


def calibrate(source: Any, qa: Iterable[object] | str | Path, *, retriever: str | None = None,
              inputs: Callable[[str], dict[str, Any]] | None = None, evaluator: str | RetrievalEvaluator = "default",
              crag: CRAG | None = None, out: str | Path | None = None, alpha: float = 1.0, steps: int = 201,
              near_miss_budget: float | None = None, keep_answers: float = 0.8, progress: bool = True) -> QACalibration:
    """Fit CRAG's two thresholds on your own retriever from question–answer pairs (no relevance labels).

    `source` is a retriever component (run with `query=`, or with `inputs(question)` as keywords) or a
    Pipeline with `retriever=` naming its retriever, run with `inputs(question)` (default `{"query":
    question}`, which Haystack hands to every component taking `query`). Give a retrieval pipeline, not your
    whole RAG pipeline: every component of it runs for every question. Each passage is labelled by whether
    it holds a gold answer (`crag_shared.calibration.holds_answer`), near-miss queries are added, and Eq. 2 is
    fitted with the judge of `crag` (your configured `CRAG` component) or of `evaluator`. `qa`: a JSONL path
    or pairs. `keep_answers` (0.8): the share of answers under which it warns.
    `near_miss_budget` (e.g. 0.2) picks the upper threshold keeping the most answers with at most
    that share of near misses passed on, instead of Eq. 2's.
    With `out`, the thresholds are written there: load them with `thresholds_path=`.
    """
    found = _retrieve(source, retriever, inputs)
    component = crag or CRAG(evaluator=evaluator)
    component.warm_up()
    judge = component.corrector

    def retrieve(question: str) -> list[Passage]:
        return [to_passage(d) for d in found(question)]

    return calibrate_qa(judge, qa, retrieve, alpha=alpha, steps=steps, progress=progress,
                        near_miss_budget=near_miss_budget, out=out,
                        keep_answers=keep_answers)
