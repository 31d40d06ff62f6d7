"""CRAG: the whole corrective step as one drop-in component (query + documents → refined knowledge)."""

from __future__ import annotations

from typing import Any

from haystack import Document, component, default_to_dict

from crag_shared import CorrectionResult, CRAGConfig
from crag_shared.config import result_metadata

from ..convert import strip_document, to_passage
from ..llm import as_llm, warm_up_all
from ..serialization import nested_from_dict_inplace, nested_to_dict


@component
class CRAG:
    """Runs Algorithm 1 of the paper between your retriever and your prompt builder.

    Outputs `documents` (the knowledge strips as Documents with provenance meta), `action`, `scores` and
    `crag` (the summary plus the full trace, including every fallback). Settings are the `CRAGConfig`
    fields as keywords: `evaluator`, `upper`, `lower`, `thresholds_path`, `refine_mode`, `strip_top_k`,
    `strip_threshold`, `web_top_k`, `on_web_failure`, `score_titles`. `web_search` is one of this
    package's web components (searched only for Incorrect/Ambiguous); `chat_generator` rewrites queries
    and judges when `evaluator="llm"`.
    """

    def __init__(self, web_search: Any | None = None, chat_generator: Any | None = None, **settings: Any) -> None:
        self.config = CRAGConfig.from_dict(settings)
        self.web_search = web_search
        self.chat_generator = chat_generator
        llm = as_llm(chat_generator)
        self._corrector = self.config.build(llm=llm, web_search=web_search.provider if web_search else None)

    def warm_up(self) -> None:
        warm_up_all(self._corrector.evaluator, self.chat_generator)

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, web_search=nested_to_dict(self.web_search),
                               chat_generator=nested_to_dict(self.chat_generator), **self.config.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CRAG":
        for key in ("web_search", "chat_generator"):
            nested_from_dict_inplace(data["init_parameters"], key)
        return cls(**data["init_parameters"])

    @staticmethod
    def _outputs(result: CorrectionResult) -> dict[str, Any]:
        documents = [strip_document(s, result.passages, result) for s in result.internal]
        documents += [strip_document(s, [], result) for s in result.external]
        return {"documents": documents, "action": result.action.value, "scores": list(result.scores),
                "crag": result_metadata(result)}

    @component.output_types(documents=list[Document], action=str, scores=list[float], crag=dict)
    def run(self, query: str, documents: list[Document]) -> dict[str, Any]:
        return self._outputs(self._corrector.correct(query, [to_passage(d) for d in documents]))

    @component.output_types(documents=list[Document], action=str, scores=list[float], crag=dict)
    async def run_async(self, query: str, documents: list[Document]) -> dict[str, Any]:
        return self._outputs(await self._corrector.acorrect(query, [to_passage(d) for d in documents]))
