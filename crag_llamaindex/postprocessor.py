"""CRAGPostprocessor: add CRAG to any LlamaIndex query engine as one node postprocessor."""

from __future__ import annotations

from typing import Any

from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.callbacks import CallbackManager
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from crag_shared import CorrectionResult, Corrector, CRAGConfig, RetrievalEvaluator, WebSearch

from .convert import knowledge_nodes, to_passage
from .events import aemit, emit
from .llm import LlamaIndexLLM


class CRAGPostprocessor(BaseNodePostprocessor):
    """Scores the retrieved nodes, picks Correct / Incorrect / Ambiguous, and returns refined knowledge.

    Returns knowledge strips as new `TextNode`s. Their metadata carries `crag_action`, `crag_score`,
    `crag_origin`, `crag_source_id`, `crag_position`, the character span, `title`/`url`, and any
    fallback taken. Internal strips keep a SOURCE relationship to the node they came from. With
    `return_strips=False` you get the original nodes that held relevant knowledge instead (untouched),
    followed by the web strips.

    Settings (evaluator spec, thresholds, refinement, web_top_k, on_web_failure...) are `CRAGConfig`
    fields, passed as keyword arguments; `evaluator` may also be a ready evaluator instance. `llm` (else
    the `Settings.llm` you set) rewrites queries for web search and serves `evaluator="llm"`; without any
    LLM the rewrite is offline keyword extraction. Web search happens only if you pass `web_search`.
    Secrets live in the web provider, which is never serialized.
    """

    config: CRAGConfig = Field(default_factory=CRAGConfig, description="CRAG settings (serializable)")
    return_strips: bool = Field(default=True, description="return knowledge strips (else filtered original nodes)")
    _corrector: Corrector = PrivateAttr()

    def __init__(self, *, llm: Any | None = None, evaluator: RetrievalEvaluator | str | None = None,
                 web_search: WebSearch | None = None, return_strips: bool = True, config: CRAGConfig | None = None,
                 callback_manager: CallbackManager | None = None, **settings: Any) -> None:
        if isinstance(evaluator, str):
            settings["evaluator"] = evaluator
            evaluator = None
        if config is not None and settings:
            raise ValueError("pass either config=... or individual settings, not both")
        config = config or CRAGConfig.from_dict(settings)
        super().__init__(config=config, return_strips=return_strips,
                         callback_manager=callback_manager or CallbackManager())
        self._corrector = config.build(llm=LlamaIndexLLM(llm), web_search=web_search, evaluator=evaluator)

    @classmethod
    def class_name(cls) -> str:
        return "CRAGPostprocessor"

    @property
    def corrector(self) -> Corrector:
        return self._corrector

    @staticmethod
    def _query(query_bundle: QueryBundle | None) -> str:
        if query_bundle is None or not query_bundle.query_str.strip():
            raise ValueError("CRAGPostprocessor needs the query: pass query_bundle=... or query_str=...")
        return query_bundle.query_str

    def correct(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None
                ) -> tuple[list[NodeWithScore], CorrectionResult]:
        """Postprocess and also return the full `CorrectionResult` (action, scores, trace)."""
        result = self._corrector.correct(self._query(query_bundle), [to_passage(n) for n in nodes])
        emit(result)
        return knowledge_nodes(result, nodes, self.return_strips), result

    async def acorrect(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None
                       ) -> tuple[list[NodeWithScore], CorrectionResult]:
        result = await self._corrector.acorrect(self._query(query_bundle), [to_passage(n) for n in nodes])
        await aemit(result)
        return knowledge_nodes(result, nodes, self.return_strips), result

    def _postprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
                           ) -> list[NodeWithScore]:
        return self.correct(nodes, query_bundle)[0]

    async def _apostprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
                                  ) -> list[NodeWithScore]:
        return (await self.acorrect(nodes, query_bundle))[0]
