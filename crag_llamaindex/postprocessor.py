"""CRAGPostprocessor: add CRAG to any LlamaIndex query engine as one node postprocessor."""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import BaseModel, Field, PrivateAttr
from llama_index.core.callbacks import CallbackManager
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.prompts import PromptTemplate
from llama_index.core.prompts.mixin import PromptDictType, PromptMixin, PromptMixinType
from llama_index.core.schema import NodeWithScore, QueryBundle

from crag_shared.adapter import (
    CorrectionResult,
    Corrector,
    CRAGConfig,
    LLMEvaluator,
    QueryRewriter,
    RetrievalEvaluator,
    WebSearch,
    check_judge_prompt,
    config_from,
    embedding_unit,
    evaluator_kind,
    evaluator_spec,
)

from .convert import knowledge_nodes, to_passage
from .embedding import embedding_evaluator
from .instrumentation import aemit, emit
from .llm import LlamaIndexLLM, configured_llm


class CRAGPostprocessor(PromptMixin, BaseNodePostprocessor):
    """Scores the retrieved nodes, picks Correct / Incorrect / Ambiguous, and returns refined knowledge.

    When CRAG abstains (retrieval judged Incorrect and no web knowledge, or an empty query) it returns no
    nodes: irrelevant text never reaches the LLM. `correct()` also returns the `CorrectionResult`, whose
    `abstention` says why; `on_web_failure="keep"` keeps the best strips of Incorrect retrieval instead.

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
                 web_search: WebSearch | None = None, return_strips: bool = True,
                 config: CRAGConfig | Mapping[str, Any] | None = None,
                 callback_manager: CallbackManager | None = None, **settings: Any) -> None:
        settings.pop("class_name", None)  # written by to_dict, read back by from_dict / model_validate
        if isinstance(evaluator, BaseEmbedding):  # the app's embedding model itself: judge with it
            evaluator = embedding_evaluator(evaluator)
        elif evaluator is not None and not isinstance(evaluator, (str, RetrievalEvaluator)):
            raise TypeError(f"evaluator must be a spec string (e.g. 'lexical', 'embedding'), a crag evaluator or "
                            f"a LlamaIndex embedding model, got {type(evaluator).__name__}")
        if config is not None and settings:
            raise ValueError(f"pass either config=CRAGConfig(...) or its settings as keywords ({', '.join(settings)}), "
                             "not both; an evaluator= goes with either")
        config = config_from(config if config is not None else settings)
        if evaluator is not None:  # it wins over the config's spec
            config = replace(config, evaluator=evaluator if isinstance(evaluator, str) else evaluator_spec(evaluator))
        if evaluator_kind(config.evaluator) == "llm" and llm is None and configured_llm() is None:
            raise ValueError(f"evaluator={config.evaluator!r} judges with an LLM, and none is configured: pass "
                             "llm=... or set Settings.llm first")
        super().__init__(config=config, return_strips=return_strips,
                         callback_manager=callback_manager or CallbackManager())
        instance = None if evaluator is None or isinstance(evaluator, str) else evaluator
        unit = embedding_unit(config.evaluator)
        if instance is None and unit:  # the embedding model the app already has
            instance = embedding_evaluator(unit=unit)
        self._corrector = config.build(llm=LlamaIndexLLM(llm), web_search=web_search, evaluator=instance)

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this class under."""
        return "CRAGPostprocessor"

    def __getstate__(self) -> dict[str, Any]:
        # LlamaIndex drops an unpicklable private attribute with a warning (web search silently gone);
        # here a web provider that refuses pickling (a key passed as an argument) says so instead.
        pickle.dumps(self._corrector)
        return super().__getstate__()

    def __setstate__(self, state: dict[str, Any]) -> None:
        # LlamaIndex rebuilds from __init__(**fields), which would lose the live web provider and load the
        # evaluator again; the pickled corrector (its key re-read from the environment) is restored as is.
        BaseModel.__setstate__(self, state)

    @property
    def corrector(self) -> Corrector:
        """The core `Corrector` this postprocessor runs."""
        return self._corrector

    @staticmethod
    def _query(query_bundle: QueryBundle | None) -> str:
        """The query to judge; an empty one is judged as unjudged by the core (no nodes come back)."""
        if query_bundle is None:
            raise ValueError("CRAGPostprocessor needs the query: pass query_bundle=... or query_str=...")
        if not isinstance(query_bundle, QueryBundle):
            raise TypeError(f"query_bundle must be a QueryBundle, got {type(query_bundle).__name__}")
        return query_bundle.query_str

    def correct(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None
                ) -> tuple[list[NodeWithScore], CorrectionResult]:
        """Postprocess and also return the full `CorrectionResult` (action, scores, trace)."""
        result = self._corrector.correct(self._query(query_bundle), [to_passage(n) for n in nodes])
        emit(result)
        return knowledge_nodes(result, nodes, self.return_strips), result

    async def acorrect(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None
                       ) -> tuple[list[NodeWithScore], CorrectionResult]:
        """Async `correct`."""
        result = await self._corrector.acorrect(self._query(query_bundle), [to_passage(n) for n in nodes])
        return await self.adeliver(result, nodes), result

    async def adeliver(self, result: CorrectionResult, nodes: list[NodeWithScore]) -> list[NodeWithScore]:
        """A finished correction as knowledge nodes, its events emitted (also for `CRAGWorkflow`)."""
        await aemit(result)
        return knowledge_nodes(result, nodes, self.return_strips)

    # -- prompts (LlamaIndex's PromptMixin) -------------------------------------------------------------
    def _get_prompts(self) -> PromptDictType:
        """`rewrite_prompt` (question -> search keywords) and, with the LLM judge, `judge_prompt`."""
        prompts: PromptDictType = {"rewrite_prompt": PromptTemplate(self._corrector.rewriter.template)}
        if isinstance(self._corrector.evaluator, LLMEvaluator):
            prompts["judge_prompt"] = PromptTemplate(self._corrector.evaluator.prompt)
        return prompts

    def _get_prompt_modules(self) -> PromptMixinType:
        return {}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        if "rewrite_prompt" in prompts:
            old = self._corrector.rewriter
            self._corrector.rewriter = QueryRewriter(old.llm, template=prompts["rewrite_prompt"].get_template(),
                                                     max_keywords=old.max_keywords)
        if "judge_prompt" in prompts:
            judge = self._corrector.evaluator
            if not isinstance(judge, LLMEvaluator):
                raise ValueError("judge_prompt applies only to evaluator='llm'")
            judge.prompt = check_judge_prompt(prompts["judge_prompt"].get_template(), judge.mode)

    def _postprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
                           ) -> list[NodeWithScore]:
        return self.correct(nodes, query_bundle)[0]

    async def _apostprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
                                  ) -> list[NodeWithScore]:
        return (await self.acorrect(nodes, query_bundle))[0]
