"""WebSearchRetriever: rewrite → web search → fetch → select, usable anywhere a retriever fits."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle

from crag_shared.adapter import CRAGConfig, RetrievalEvaluator, WebSearch

from .convert import knowledge_nodes
from .instrumentation import aemit, emit
from .llm import LlamaIndexLLM


class WebSearchRetriever(BaseRetriever):
    """Retrieves web knowledge for a query: CRAG's Incorrect path on its own.

    The question is rewritten into keywords (with `llm`, else the `Settings.llm` you set, else offline),
    searched with `web_search` (top `web_top_k` results), the pages fetched and split into title-prefixed
    paragraphs, and the best five paragraphs selected by the evaluator. Nodes carry `url`, `title` and
    the paragraph's score. Search failures give no nodes (the reason is in a `CRAGFallbackEvent`).
    """

    def __init__(self, web_search: WebSearch, *, llm: Any | None = None,
                 evaluator: RetrievalEvaluator | str | None = None, **settings: Any) -> None:
        if isinstance(evaluator, str):
            settings["evaluator"] = evaluator
            evaluator = None
        config = CRAGConfig.from_dict({**settings, "on_web_failure": "drop"})
        self._corrector = config.build(llm=LlamaIndexLLM(llm), web_search=web_search, evaluator=evaluator)
        super().__init__()

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = self._corrector.correct(query_bundle.query_str, [])  # no passages: Incorrect, to the web
        emit(result)
        return knowledge_nodes(result, [], return_strips=True)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = await self._corrector.acorrect(query_bundle.query_str, [])  # no passages: to the web
        await aemit(result)
        return knowledge_nodes(result, [], return_strips=True)
