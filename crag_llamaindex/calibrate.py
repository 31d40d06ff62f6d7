"""`calibrate`: CRAG's thresholds fitted on your index, from the questions and answers you keep."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever

from crag_shared.adapter import Passage, QACalibration, RetrievalEvaluator, calibrate_qa

from .convert import to_passage, unjudgeable
from .postprocessor import CRAGPostprocessor


def _retriever(source: Any, similarity_top_k: int) -> BaseRetriever:
    if isinstance(source, BaseRetriever):
        return source
    retriever = getattr(source, "retriever", None)  # a query engine's (RetrieverQueryEngine, CRAGQueryEngine)
    if isinstance(retriever, BaseRetriever):
        return retriever
    if callable(getattr(source, "as_retriever", None)):
        return source.as_retriever(similarity_top_k=similarity_top_k)
    raise TypeError(f"calibrate needs a LlamaIndex index, retriever or query engine with a retriever, got "
                    f"{type(source).__name__}")


def calibrate(source: Any, qa: Iterable[object] | str | Path, *, evaluator: str | RetrievalEvaluator = "default",
              crag: CRAGPostprocessor | None = None, out: str | Path | None = None, similarity_top_k: int = 10,
              alpha: float = 1.0, steps: int = 201, near_miss_budget: float | None = None, keep_answers: float = 0.8,
              progress: bool = True) -> QACalibration:
    """Fit CRAG's two thresholds on your own retriever from question–answer pairs (no relevance labels).

    Each question is retrieved with `source` (an index: `as_retriever(similarity_top_k=...)`; a retriever; or
    a query engine's retriever), each passage labelled by whether it holds a gold answer (see
    `crag_shared.calibration.holds_answer`), near-miss queries added, and Eq. 2 fitted with the judge of
    `crag` (your configured `CRAGPostprocessor`) or of `evaluator`. `qa`: a JSONL path or pairs
    (`(question, answers)`, `{"question", "answers"}`). `keep_answers` (0.8): the share of answers under which it warns.
    `near_miss_budget` (e.g. 0.2) picks the upper
    threshold keeping the most answers with at most that share of near misses passed on, instead of Eq. 2's.
    With `out`, the thresholds are written there; load them with `thresholds_path=`. The result's `summary()`
    holds the trade-off table.
    """
    retriever = _retriever(source, similarity_top_k)
    judge = (crag or CRAGPostprocessor(evaluator=evaluator)).corrector

    def retrieve(question: str) -> list[Passage]:
        return [to_passage(n) for n in retriever.retrieve(question) if not unjudgeable(n)]

    return calibrate_qa(judge, qa, retrieve, alpha=alpha, steps=steps, progress=progress,
                        near_miss_budget=near_miss_budget, out=out,
                        keep_answers=keep_answers)
