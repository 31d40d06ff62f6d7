"""CRAGPostprocessor: add CRAG to any LlamaIndex query engine as one node postprocessor (a reranker)."""

from __future__ import annotations

import pickle
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import BaseModel, Field, PrivateAttr
from llama_index.core.callbacks import CallbackManager
from llama_index.core.llms import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.prompts import PromptTemplate
from llama_index.core.prompts.mixin import PromptDictType, PromptMixin, PromptMixinType
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle

from crag_shared.adapter import (
    CorrectionResult,
    Corrector,
    CRAGConfig,
    EmbeddingEvaluator,
    LLMEvaluator,
    QueryRewriter,
    RetrievalEvaluator,
    WebSearch,
    check_judge_prompt,
    config_from,
    describe,
    embedding_unit,
    evaluator_kind,
    evaluator_settings,
    saved_evaluator,
)

from .convert import abstention_node, knowledge_nodes, to_passage, unjudgeable, verdict_node
from .embedding import embedding_evaluator
from .instrumentation import aemit, dispatcher, emit, reranking
from .llm import LlamaIndexLLM, configured_llm
from .web_source import web_source


class CRAGPostprocessor(PromptMixin, BaseNodePostprocessor):
    """Scores the retrieved nodes, picks Correct / Incorrect / Ambiguous, and returns refined knowledge,
    as a reranker does: sorted by CRAG's score (in [-1, 1]), at most `top_n`, the retrieval score kept in
    `metadata["retrieval_score"]` with `keep_retrieval_score=True`.

    When CRAG abstains (retrieval judged Incorrect and no web knowledge, nothing passing its judgment, or
    an empty query), none of the retrieved text goes on: in a query engine (`postprocess_nodes`) it returns
    one node instead, whose text tells the LLM that CRAG found no reliable knowledge and why, and whose
    metadata is CRAG's verdict, so the engine's response reads `response.metadata["crag"]` (the node's id
    is "crag") and the answer says why; `abstention_note=False` returns no nodes (LlamaIndex's
    synthesizers then answer "Empty Response"). `correct()` returns the knowledge nodes and the
    `CorrectionResult`, whose `abstention` says why; `on_web_failure="keep"` keeps the best strips of
    Incorrect retrieval instead. `verdict_node=True` adds, with knowledge, a last node without text that
    carries the verdict the same way, so every question's response has `response.metadata["crag"]` (for a
    log of live queries; a node postprocessor after CRAG then sees it too, and response modes that make one
    LLM call per node, "refine" and "accumulate", spend one on it).

    Returns knowledge strips as new `TextNode`s, each at most `max_strip_chars` long. Their metadata
    carries `crag_action`, `crag_score`, `crag_origin`, `crag_source_id`, `crag_position`, the character
    span (also as `start_char_idx`/`end_char_idx`), `title`/`url`, and any fallback taken; they keep their
    source's metadata, templates and a SOURCE relationship. With `return_strips=False` you get the
    original nodes that held relevant knowledge instead, followed by the web strips. Nodes without text
    (images) cannot be judged: they follow the knowledge untouched, and the trace lists them as skipped.

    Settings (evaluator spec, thresholds, refinement, web_top_k, on_web_failure...) are `CRAGConfig`
    fields, passed as keyword arguments or as `config=`; `evaluator` may also be a ready evaluator
    instance or your LlamaIndex embedding model. The settings are live: assign a new config
    (`pp.config = dataclasses.replace(pp.config, upper=0.9)`) or `model_copy(update={"config": ...})` and
    the next query uses it; the config itself is read-only. `llm` (else the `Settings.llm` you set)
    rewrites queries for web search and judges: with no `evaluator` given ("auto"), the LLM given, or set in
    `Settings.llm` when the postprocessor is built, judges each query's nodes in one call (crag's offline
    default judge stands in where it fails, and skips the call for off-topic nodes); `judge_llm` names a
    cheaper LLM to judge with; `evaluator="default"` judges offline whatever LLM there is. Without any LLM
    the judge is the offline default and the rewrite is offline keyword extraction. Web search happens only
    if you pass `web_search`: a crag provider, a retriever or a search function (see `web_source`). Secrets
    live in the web provider, which is never serialized.
    """

    config: CRAGConfig = Field(default_factory=CRAGConfig, description="CRAG settings (serializable)")
    return_strips: bool = Field(default=True, description="return knowledge strips (else filtered original nodes)")
    top_n: int | None = Field(default=None, ge=1, description="at most this many knowledge nodes (None: all)")
    keep_retrieval_score: bool = Field(default=False, description="keep the retrieval score in metadata")
    reuse_query_embedding: bool = Field(
        default=True, description="judge with the query bundle's embedding when the retriever computed one")
    abstention_note: bool = Field(
        default=True, description="on abstention, return one node that tells the LLM and the response why")
    verdict_node: bool = Field(
        default=False, description="with knowledge, also return a last node without text carrying CRAG's verdict, "
        "so response.metadata['crag'] holds it for answered questions too (log every question's verdict)")
    _llm: LlamaIndexLLM = PrivateAttr(default_factory=LlamaIndexLLM)
    _judge_llm: LlamaIndexLLM | None = PrivateAttr(default=None)
    _web_search: WebSearch | None = PrivateAttr(default=None)
    _evaluator: RetrievalEvaluator | None = PrivateAttr(default=None)
    _evaluator_config: tuple[str, Any] | None = PrivateAttr(default=None)
    _prompts: dict[str, str] = PrivateAttr(default_factory=dict)
    _built: tuple[CRAGConfig, Corrector] | None = PrivateAttr(default=None)

    def __init__(self, *, llm: LLM | None = None, judge_llm: LLM | None = None,
                 evaluator: RetrievalEvaluator | str | None = None,
                 web_search: WebSearch | BaseRetriever | Callable[[str], Any] | None = None,
                 config: CRAGConfig | Mapping[str, Any] | None = None,
                 callback_manager: CallbackManager | None = None, **settings: Any) -> None:
        settings.pop("class_name", None)  # written by to_dict, read back by from_dict / model_validate
        own = {name: settings.pop(name) for name in ("return_strips", "top_n", "keep_retrieval_score",
                                                     "reuse_query_embedding", "abstention_note", "verdict_node")
               if name in settings}
        if isinstance(evaluator, BaseEmbedding):  # the app's embedding model itself: judge with it
            evaluator = embedding_evaluator(evaluator)
        elif evaluator is not None and not isinstance(evaluator, (str, RetrievalEvaluator)):
            raise TypeError(f"evaluator must be a spec string (e.g. 'lexical', 'embedding'), a crag evaluator or "
                            f"a LlamaIndex embedding model, got {type(evaluator).__name__}")
        if config is not None and settings:
            raise ValueError(f"pass either config=CRAGConfig(...) or its settings as keywords ({', '.join(settings)}), "
                             "not both; an evaluator= goes with either")
        config = config_from(config if config is not None else settings)
        if isinstance(evaluator, str):  # it wins over the config's spec
            config = replace(config, evaluator=evaluator, evaluator_options=None)
        elif evaluator is not None:
            spec, options = saved_evaluator(evaluator)
            config = replace(config, evaluator=spec, evaluator_options=options)
        if evaluator_kind(config.evaluator) == "llm" and llm is None and judge_llm is None and configured_llm() is None:
            raise ValueError(f"evaluator={config.evaluator!r} judges with an LLM, and none is configured: pass "
                             "llm=... or set Settings.llm first")
        web_search = web_source(web_search) if web_search is not None else None
        # pydantic's __init__ takes this model's fields; mypy sees only the parent's signature
        super().__init__(config=config, callback_manager=callback_manager or CallbackManager(),  # type: ignore[call-arg]
                         **own)
        self._llm = LlamaIndexLLM(llm)
        self._judge_llm = LlamaIndexLLM(judge_llm) if judge_llm is not None else None
        self._web_search = web_search
        if isinstance(evaluator, RetrievalEvaluator):
            self._evaluator, self._evaluator_config = evaluator, (config.evaluator, config.evaluator_options)
        self.corrector  # noqa: B018 - build now: a bad spec or thresholds file fails here, not at the first query

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this class under."""
        return "CRAGPostprocessor"

    @property
    def corrector(self) -> Corrector:
        """The core `Corrector` this postprocessor runs, rebuilt when `config` was replaced (the evaluator
        instance, web search, LLM and prompts carry over)."""
        config = self.config
        if not isinstance(config, CRAGConfig):  # model_copy(update={"config": {...}}) skips validation
            config = self.config = config_from(config)
        built = self._built
        if built is not None and built[0] is config:
            return built[1]
        judge = self._judge_llm or (self._llm if self._llm.held else None)
        corrector = Corrector.from_config(config, llm=self._llm, judge_llm=judge, web_search=self._web_search,
                                          evaluator=self._evaluator_for(config))
        if "rewrite" in self._prompts:
            corrector.rewriter = QueryRewriter(self._llm, template=self._prompts["rewrite"],
                                               max_keywords=config.max_keywords)
        if "judge" in self._prompts and isinstance(corrector.evaluator, LLMEvaluator):
            corrector.evaluator.prompt = self._prompts["judge"]
        self._built = (config, corrector)
        return corrector

    def _evaluator_for(self, config: CRAGConfig) -> RetrievalEvaluator | None:
        """The evaluator instance to keep for `config`: the one given while the config still names it,
        else the app's embedding model for an `embedding` spec; None lets the config build its own."""
        if self._evaluator is not None and self._evaluator_config == (config.evaluator, config.evaluator_options):
            return self._evaluator
        unit = embedding_unit(config.evaluator)
        return embedding_evaluator(unit=unit, **evaluator_settings(config)) if unit else None

    def __getstate__(self) -> dict[str, Any]:
        # LlamaIndex drops an unpicklable private attribute with a warning (web search silently gone);
        # here a part that refuses pickling (a web provider given its key as an argument) says so instead.
        for name, value in (self.__pydantic_private__ or {}).items():
            try:
                pickle.dumps(value)
            except Exception as error:
                raise TypeError(f"CRAGPostprocessor cannot be pickled: its {name.strip('_')} "
                                f"({type(value).__name__}) cannot: {error}") from error
        return super().__getstate__()

    def __setstate__(self, state: dict[str, Any]) -> None:
        # LlamaIndex rebuilds from __init__(**fields), which would lose the live web provider and the
        # evaluator instance; the pickled state (the web key re-read from the environment) is restored as is.
        BaseModel.__setstate__(self, state)

    @staticmethod
    def _query(query_bundle: QueryBundle | None) -> str:
        """The query to judge; an empty one is judged as unjudged by the core (CRAG abstains on it)."""
        if query_bundle is None:
            raise ValueError("CRAGPostprocessor needs the query: pass query_bundle=... or query_str=...")
        if not isinstance(query_bundle, QueryBundle):
            raise TypeError(f"query_bundle must be a QueryBundle, got {type(query_bundle).__name__}")
        return query_bundle.query_str

    def _prepared(self, query_bundle: QueryBundle | None) -> tuple[str, Corrector, AbstractContextManager[None]]:
        """The query, the corrector, and the block inside which an embedding judge uses the retriever's query
        embedding for this query (this request only: never another request with the same words)."""
        query, corrector = self._query(query_bundle), self.corrector
        evaluator = corrector.evaluator
        if (self.reuse_query_embedding and isinstance(evaluator, EmbeddingEvaluator) and query_bundle is not None
                and query_bundle.embedding and query_bundle.custom_embedding_strs is None):
            return query, corrector, evaluator.query_embedding(query, query_bundle.embedding)
        return query, corrector, nullcontext()

    def _reranking(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None
                   ) -> AbstractContextManager[Callable[[list[NodeWithScore]], list[NodeWithScore]]]:
        """The rerank events LlamaIndex's own rerankers report, named after this postprocessor's judge."""
        return reranking(self.callback_manager, f"crag:{describe(self.corrector.evaluator)}",
                         self.top_n or len(nodes), nodes, query_bundle)

    def correct(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None
                ) -> tuple[list[NodeWithScore], CorrectionResult]:
        """Postprocess and also return the full `CorrectionResult` (action, scores, trace)."""
        query, corrector, embedded = self._prepared(query_bundle)
        with self._reranking(nodes, query_bundle) as done, embedded:
            result = corrector.correct(query, [to_passage(n) for n in nodes])
            emit(result)
            return done(self.ranked(result, nodes)), result

    async def acorrect(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None
                       ) -> tuple[list[NodeWithScore], CorrectionResult]:
        """Async `correct`."""
        query, corrector, embedded = self._prepared(query_bundle)
        with self._reranking(nodes, query_bundle) as done, embedded:
            result = await corrector.acorrect(query, [to_passage(n) for n in nodes])
            await aemit(result)
            return done(self.ranked(result, nodes)), result

    async def adeliver(self, result: CorrectionResult, nodes: list[NodeWithScore],
                       query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        """A finished correction as ranked knowledge nodes, its events emitted (`CRAGWorkflow`'s last step)."""
        with self._reranking(nodes, query_bundle or QueryBundle(result.query)) as done:
            await aemit(result)
            return done(self.ranked(result, nodes))

    def ranked(self, result: CorrectionResult, nodes: list[NodeWithScore]) -> list[NodeWithScore]:
        """The knowledge as nodes, best CRAG score first (ties in knowledge order), cut to `top_n`; then
        the images (nodes without text), which CRAG cannot judge, untouched."""
        knowledge = knowledge_nodes(result, nodes, self.return_strips, self.keep_retrieval_score)
        knowledge.sort(key=lambda n: -(n.score if n.score is not None else -1.0))
        return knowledge[: self.top_n] + [n for n in nodes if unjudgeable(n)]

    # -- prompts (LlamaIndex's PromptMixin): {query_str} as everywhere in LlamaIndex ---------------------
    def _get_prompts(self) -> PromptDictType:
        """`rewrite_prompt` (question -> search keywords) and, with the LLM judge, `judge_prompt`."""
        corrector = self.corrector
        prompts: PromptDictType = {"rewrite_prompt": PromptTemplate(_to_llamaindex(corrector.rewriter.template))}
        if isinstance(corrector.evaluator, LLMEvaluator):
            prompts["judge_prompt"] = PromptTemplate(_to_llamaindex(corrector.evaluator.prompt))
        return prompts

    def _get_prompt_modules(self) -> PromptMixinType:
        return {}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        corrector = self.corrector
        if "rewrite_prompt" in prompts:
            template = _to_core(prompts["rewrite_prompt"].get_template())
            corrector.rewriter = QueryRewriter(self._llm, template=template, max_keywords=self.config.max_keywords)
            self._prompts["rewrite"] = template
        if "judge_prompt" in prompts:
            judge = corrector.evaluator
            if not isinstance(judge, LLMEvaluator):
                raise ValueError("judge_prompt applies only to evaluator='llm'")
            judge.prompt = self._prompts["judge"] = check_judge_prompt(
                _to_core(prompts["judge_prompt"].get_template()), judge.mode)

    def _delivered(self, knowledge: list[NodeWithScore], result: CorrectionResult) -> list[NodeWithScore]:
        """What a query engine's synthesizer gets: the knowledge, then the node that carries CRAG's verdict, last
        so that no node of the user's with the id "crag" displaces it: when CRAG abstained, the abstention node,
        whose text tells the LLM why; else, with `verdict_node`, a node without text."""
        if result.abstained and self.abstention_note:
            return [*knowledge, abstention_node(result)]
        if self.verdict_node and not result.abstained:
            return [*knowledge, verdict_node(result)]
        return knowledge

    @dispatcher.span
    def _postprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
                           ) -> list[NodeWithScore]:
        return self._delivered(*self.correct(nodes, query_bundle))

    @dispatcher.span
    async def _apostprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
                                  ) -> list[NodeWithScore]:
        return self._delivered(*(await self.acorrect(nodes, query_bundle)))


def _to_llamaindex(template: str) -> str:
    """A core prompt with LlamaIndex's variable name for the question."""
    return template.replace("{question}", "{query_str}")


def _to_core(template: str) -> str:
    """A LlamaIndex prompt (`{query_str}`, or the core's `{question}`) in the core's form."""
    return template.replace("{query_str}", "{question}")
