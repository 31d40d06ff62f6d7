"""WebSearchRetriever: rewrite → web search → fetch → select, usable anywhere a retriever fits."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.llms import LLM
from llama_index.core.schema import NodeWithScore, QueryBundle

from crag_shared.adapter import Corrector, CRAGConfig, Refinement, RetrievalEvaluator, WebOutcome, WebSearch

from .convert import strip_node
from .instrumentation import emit_search
from .llm import LlamaIndexLLM


class WebSearchRetriever(BaseRetriever):
    """Retrieves web knowledge for a query: CRAG's web path on its own, with no retrieval to judge.

    The question is rewritten into keywords (with `llm`, else the `Settings.llm` you set, else offline),
    searched with `web_search` (top `web_top_k` results), the pages fetched and split into title-prefixed
    paragraphs, and the best `strip_top_k` paragraphs selected by the evaluator. Nodes carry `url`,
    `title` and the paragraph's score. A failed search gives no nodes; the reason is logged on `crag`
    and sent as a `CRAGFallbackEvent` beside the `CRAGWebSearchEvent`.
    """

    def __init__(self, web_search: WebSearch, *, llm: LLM | None = None,
                 evaluator: RetrievalEvaluator | str | None = None, **settings: Any) -> None:
        if isinstance(evaluator, str):
            settings["evaluator"] = evaluator
            evaluator = None
        self._corrector = Corrector.from_config(CRAGConfig.from_dict(settings), llm=LlamaIndexLLM(llm),
                                                web_search=web_search, evaluator=evaluator)
        super().__init__()

    def _nodes(self, web: WebOutcome, refinement: Refinement) -> list[NodeWithScore]:
        if web.failure:
            web.trace.fallback("web_search", web.failure, "no web nodes")
        emit_search(web)
        return [strip_node(strip, None, []) for strip in refinement.strips]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        web = self._corrector.search(query_bundle.query_str)
        assert web is not None  # a web search is always configured here
        return self._nodes(web, self._corrector.refine(web.question, web.passages, web=True))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        web = await self._corrector.asearch(query_bundle.query_str)
        assert web is not None
        return self._nodes(web, await self._corrector.arefine(web.question, web.passages, web=True))
