"""QueryRewriter: a question → at most three search keywords, with any Haystack chat generator."""

from __future__ import annotations

from typing import Any

from haystack import component, default_to_dict

from crag_shared import QueryRewriter as CoreRewriter
from crag_shared.rewrite import PAPER_REWRITE_PROMPT

from ..llm import as_llm, warm_up_all
from ..serialization import nested_from_dict_inplace, nested_to_dict


@component
class QueryRewriter:
    """The paper's few-shot keyword rewrite (Appendix A, Table 5) through `chat_generator`.

    Without a generator, or when it fails or answers nothing usable, keywords are extracted offline;
    `method` says which ("llm" or "keywords") and `note` why a fallback was taken ("" when none).
    """

    def __init__(self, chat_generator: Any | None = None, template: str = PAPER_REWRITE_PROMPT,
                 max_keywords: int = 3) -> None:
        self.chat_generator = chat_generator
        self.template = template
        self.max_keywords = max_keywords
        llm = as_llm(chat_generator)
        self._rewriter = CoreRewriter(llm, template=template, max_keywords=max_keywords)

    def warm_up(self) -> None:
        warm_up_all(self.chat_generator)

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, chat_generator=nested_to_dict(self.chat_generator), template=self.template,
                               max_keywords=self.max_keywords)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "QueryRewriter":
        nested_from_dict_inplace(data["init_parameters"], "chat_generator")
        return cls(**data["init_parameters"])

    @component.output_types(search_query=str, method=str, note=str)
    def run(self, query: str) -> dict[str, Any]:
        rewrite = self._rewriter.rewrite(query)
        return {"search_query": rewrite.query, "method": rewrite.method, "note": rewrite.note or ""}

    @component.output_types(search_query=str, method=str, note=str)
    async def run_async(self, query: str) -> dict[str, Any]:
        rewrite = await self._rewriter.arewrite(query)
        return {"search_query": rewrite.query, "method": rewrite.method, "note": rewrite.note or ""}
