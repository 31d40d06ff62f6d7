"""KnowledgeRefiner: documents → the few knowledge strips that matter for the query."""

from __future__ import annotations

from typing import Any, Literal

from haystack import Document, component, default_to_dict

from crag_shared import Corrector, CRAGConfig, StripRefiner

from ..convert import strip_document, to_passage
from ..llm import as_llm, warm_up_all
from ..serialization import nested_from_dict_inplace, nested_to_dict


@component
class KnowledgeRefiner:
    """Decompose → filter → recompose (paper section 4.4), as a component.

    `mode` is "excerption" (sentence groups), "fixed_num" (50-word windows) or "selection" (whole
    documents, the right mode for web page paragraphs). At most `top_k` strips scoring at least
    `threshold` are kept, in original order. Each output Document keeps its source's meta and adds
    `crag_score`, `crag_origin` (`origin`), `crag_source_id`, `crag_position`, `crag_start`/`crag_end`.
    `evaluator` is a spec as in RetrievalEvaluator ("llm" judges with `chat_generator`).
    """

    def __init__(self, evaluator: str = "lexical", mode: Literal["fixed_num", "excerption", "selection"] = "excerption",
                 top_k: int = 5, threshold: float = -0.5, origin: Literal["internal", "web"] = "internal",
                 score_titles: bool = False, chat_generator: Any | None = None) -> None:
        if origin not in ("internal", "web"):
            raise ValueError(f"origin must be 'internal' or 'web', got {origin!r}")
        self.evaluator = evaluator
        self.mode = mode
        self.top_k = top_k
        self.threshold = threshold
        self.origin = origin
        self.score_titles = score_titles
        self.chat_generator = chat_generator
        llm = as_llm(chat_generator)
        refiner = StripRefiner(mode, top_k=top_k, threshold=threshold)
        self._corrector = Corrector(evaluator=CRAGConfig(evaluator=evaluator).make_evaluator(llm), refiner=refiner,
                                    web_refiner=refiner, score_titles=score_titles)

    def warm_up(self) -> None:
        warm_up_all(self._corrector.evaluator, self.chat_generator)

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, evaluator=self.evaluator, mode=self.mode, top_k=self.top_k,
                               threshold=self.threshold, origin=self.origin, score_titles=self.score_titles,
                               chat_generator=nested_to_dict(self.chat_generator))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "KnowledgeRefiner":
        nested_from_dict_inplace(data["init_parameters"], "chat_generator")
        return cls(**data["init_parameters"])

    @component.output_types(documents=list[Document])
    def run(self, query: str, documents: list[Document]) -> dict[str, Any]:
        passages = [to_passage(d) for d in documents]
        refinement = self._corrector.refine(query, passages, web=self.origin == "web")
        return {"documents": [strip_document(s, passages) for s in refinement.strips]}

    @component.output_types(documents=list[Document])
    async def run_async(self, query: str, documents: list[Document]) -> dict[str, Any]:
        passages = [to_passage(d) for d in documents]
        refinement = await self._corrector.arefine(query, passages, web=self.origin == "web")
        return {"documents": [strip_document(s, passages) for s in refinement.strips]}
