"""RetrievalEvaluator: scores retrieved documents and routes them to the `correct`, `incorrect` or
`ambiguous` output, so only the branch of the chosen action runs downstream."""

from __future__ import annotations

from typing import Any

from haystack import Document, component, default_to_dict

from crag_shared import Action, CorrectionResult, CRAGConfig

from ..convert import scored_copy, to_passage
from ..llm import as_llm, warm_up_all
from ..serialization import nested_from_dict_inplace, nested_to_dict


@component
class RetrievalEvaluator:
    """CRAG's retrieval evaluator and action trigger (paper sections 4.2-4.3) as a routing component.

    All documents leave on exactly one of `correct`, `incorrect` or `ambiguous`, as copies carrying
    the evaluator's score (`score`, `meta["crag_score"]`) and `meta["crag_action"]`. `action` and
    `scores` (input order) are always emitted; `web_query` (the query, for a rewriter) only when the
    action needs the web (Incorrect or Ambiguous). `evaluator` is "lexical", "t5:PATH",
    "cross-encoder:PATH" or "llm" (then `chat_generator` judges); thresholds default to the evaluator's.
    """

    def __init__(self, evaluator: str = "lexical", upper: float | None = None, lower: float | None = None,
                 thresholds_path: str | None = None, score_titles: bool = False,
                 chat_generator: Any | None = None) -> None:
        self.evaluator = evaluator
        self.upper = upper
        self.lower = lower
        self.thresholds_path = thresholds_path
        self.score_titles = score_titles
        self.chat_generator = chat_generator
        llm = as_llm(chat_generator)
        self._corrector = CRAGConfig(evaluator=evaluator, upper=upper, lower=lower, thresholds_path=thresholds_path,
                                     score_titles=score_titles).build(llm=llm)

    def warm_up(self) -> None:
        warm_up_all(self._corrector.evaluator, self.chat_generator)

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, evaluator=self.evaluator, upper=self.upper, lower=self.lower,
                               thresholds_path=self.thresholds_path, score_titles=self.score_titles,
                               chat_generator=nested_to_dict(self.chat_generator))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RetrievalEvaluator":
        nested_from_dict_inplace(data["init_parameters"], "chat_generator")
        return cls(**data["init_parameters"])

    @staticmethod
    def _route(query: str, documents: list[Document], result: CorrectionResult) -> dict[str, Any]:
        action = result.action
        routed = [scored_copy(d, s, crag_action=action.value) for d, s in zip(documents, result.scores)]
        outputs: dict[str, Any] = {action.value: routed, "action": action.value, "scores": list(result.scores)}
        if action is not Action.CORRECT:
            outputs["web_query"] = query
        return outputs

    @component.output_types(correct=list[Document], incorrect=list[Document], ambiguous=list[Document],
                            action=str, scores=list[float], web_query=str)
    def run(self, query: str, documents: list[Document]) -> dict[str, Any]:
        return self._route(query, documents, self._corrector.judge(query, [to_passage(d) for d in documents]))

    @component.output_types(correct=list[Document], incorrect=list[Document], ambiguous=list[Document],
                            action=str, scores=list[float], web_query=str)
    async def run_async(self, query: str, documents: list[Document]) -> dict[str, Any]:
        result = await self._corrector.ajudge(query, [to_passage(d) for d in documents])
        return self._route(query, documents, result)
