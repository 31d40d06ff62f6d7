"""CRAG: the whole corrective step as one drop-in component (query + documents → refined knowledge)."""

from typing import Any

from haystack import Document, component, default_to_dict
from haystack.utils import ComponentDevice

from crag_shared.adapter import (
    AmbiguousMode,
    CorrectionResult,
    Corrector,
    CRAGConfig,
    OnWebFailure,
    Passage,
    RefineMode,
    RetrievalEvaluator,
    WebSearch,
)

from ..convert import checked_documents, strip_document, to_passage
from ..embedding import deserialize_device, evaluator_for, evaluator_setting, query_embedding_for
from ..integration import RANKERS, keep_earlier_type_string
from ..lifecycle import Lifecycle
from ..llm import ChatGenerator, as_llm, warm_up_all
from ..logs import checked_query, observed
from ..report import CRAGReport
from ..serialization import MODEL_PARTS, from_dict_with_nested, nested_to_dicts
from .component_web_search import ComponentWebSearch
from .web_search import _WebSearchComponent

OUTPUTS = {"documents": list[Document], "abstention": str, "action": str, "scores": list[float], "crag": CRAGReport}


@component
class CRAG(Lifecycle):
    """Runs Algorithm 1 of the paper between your retriever and your prompt builder: `Corrector.correct`.

    Outputs `documents` (the knowledge strips as Documents with provenance meta), `action`, `scores` and
    `crag` (a `CRAGReport`: the summary plus the full trace, including every fallback; faults are also logged on
    Haystack's logger as warnings, no web search configured once at INFO).

    When CRAG abstains (retrieval judged Incorrect and no web knowledge, nothing passing the strip
    threshold, or an empty query, whose action is "unjudged"), `documents` is not emitted at all and
    `abstention` carries the reason instead: with a prompt builder that requires `documents`, the
    generator never runs; route `abstention` to a `NoAnswerReply` for the answer. A query that is not a
    string raises.

    Usage:

    ```python
    pipeline.connect("retriever.documents", "crag.documents")
    pipeline.connect("crag.documents", "prompt_builder.documents")   # required_variables=["query", "documents"]
    pipeline.connect("crag.abstention", "no_answer.abstention")      # NoAnswerReply
    ```
    """

    __module__ = RANKERS  # its canonical, allowlisted home (see crag_haystack.integration)

    def __init__(self, web_search: _WebSearchComponent | WebSearch | None = None,
                 chat_generator: ChatGenerator | None = None, *, judge_generator: ChatGenerator | None = None,
                 evaluator: str | RetrievalEvaluator = "auto",
                 evaluator_options: dict[str, Any] | None = None, device: ComponentDevice | None = None,
                 upper: float | None = None, lower: float | None = None, thresholds_path: str | None = None,
                 refine_mode: RefineMode = "excerption", strip_top_k: int = 5, strip_threshold: float = -0.5,
                 web_top_k: int = 5, on_web_failure: OnWebFailure = "drop", ambiguous: AmbiguousMode = "drop",
                 score_titles: bool = False,
                 web_refine_mode: RefineMode = "selection", max_keywords: int = 3,
                 fallback_evaluator: str | None = "lexical", max_strip_chars: int = 2_000,
                 text_embedder: Any | None = None, document_embedder: Any | None = None,
                 language: str = "en") -> None:
        """
        :param web_search: a web-search component of this package (`SerpAPIWebSearch`, `ReplayWebSearch`,
            `ComponentWebSearch`), your own Haystack web-search component (anything with `documents`/`links`
            outputs: wrapped in `ComponentWebSearch`), or any crag_shared provider; searched only for
            Incorrect/Ambiguous. A provider works but cannot be saved with the pipeline.
        :param chat_generator: a Haystack chat generator: rewrites queries, and judges the documents (one call
            per query) unless `evaluator` names another judge or `judge_generator` another generator.
        :param judge_generator: a (cheaper) chat generator to judge with instead of `chat_generator`.
        :param evaluator: an evaluator spec (`crag_shared.evaluators.EVALUATOR_SPECS`): "auto" (the default:
            the LLM judge where a generator is given, crag's offline default judge standing in where it fails;
            else "default"), "default" (crag's
            trained reader blended with the lexical judge, for English when `crag-shared[reader]` is installed, as this
            package installs it; else lexical), "reader", "lexical",
            "cross-encoder:PATH", "combined:lexical-minilm", "llm" (then `chat_generator` judges)...; or a
            ready crag evaluator, saved as its spec and settings.
        :param evaluator_options: the evaluator's constructor settings as plain values, e.g.
            `{"max_length": 256, "batch_size": 16, "quantize": True}`.
        :param device: where a model evaluator runs, as Haystack components take it (`ComponentDevice`).
        :param upper: Correct when any score is at least this; default: the evaluator's own.
        :param lower: Incorrect when every score is below this; default: the evaluator's own.
        :param thresholds_path: thresholds JSON from `crag calibrate`; wins over `upper`/`lower`.
        :param refine_mode: how retrieved documents are cut into strips ("excerption", "fixed_num", "selection").
        :param strip_top_k: strips kept per refinement.
        :param strip_threshold: strips scoring below this are dropped.
        :param web_top_k: result pages fetched per search.
        :param on_web_failure: what Incorrect does without web knowledge: "drop" (abstain, as in the paper)
            or "keep" (the retrieved documents' best strips, flagged).
        :param ambiguous: what an Ambiguous question's strips below the upper threshold do: "drop" (dropped
            without web knowledge) or "guard" (handed on with `meta["unverified"]`, the instruction to answer
            only from a passage that states the answer: show it in your prompt, as `DEFAULT_TEMPLATE` does).
        :param score_titles: score "title: text" when a document has a title its text does not start with.
        :param web_refine_mode: how web paragraphs are refined ("selection", as in the paper).
        :param max_keywords: at most this many search keywords.
        :param fallback_evaluator: the evaluator spec used when the evaluator fails at run time (None: raise).
        :param max_strip_chars: no strip is longer; text without sentence punctuation is cut at word boundaries.
        :param language: what text is analyzed as, and whose follow-up table questions are read with: an
            ISO 639-1 code ("en", "zh", "ja", "de", ...) or "auto" (each question's language, detected).
        :param text_embedder: with `evaluator="embedding"`, the pipeline's Haystack text embedder (queries).
        :param document_embedder: with `evaluator="embedding"`, its document embedder (passages, batched).
        """
        spec, options, instance = evaluator_setting(evaluator, evaluator_options, device)
        self.evaluator_options = evaluator_options if instance is None else options
        self.device = device
        self.config = CRAGConfig(evaluator=spec, evaluator_options=options,
                                 upper=upper, lower=lower, thresholds_path=thresholds_path,
                                 refine_mode=refine_mode, strip_top_k=strip_top_k, strip_threshold=strip_threshold,
                                 web_top_k=web_top_k, on_web_failure=on_web_failure, ambiguous=ambiguous,
                                 score_titles=score_titles,
                                 web_refine_mode=web_refine_mode, max_keywords=max_keywords,
                                 fallback_evaluator=fallback_evaluator, max_strip_chars=max_strip_chars,
                                 language=language)
        if web_search is not None and not isinstance(web_search, (_WebSearchComponent, WebSearch)) and callable(
                getattr(web_search, "run", None)):
            web_search = ComponentWebSearch(web_search)  # the application's own web-search component
        if web_search is not None and not isinstance(web_search, (_WebSearchComponent, WebSearch)):
            raise TypeError("web_search must be a crag_haystack web-search component or a crag_shared provider, "
                            f"got {type(web_search).__name__}")
        self.web_search = web_search
        self.chat_generator = chat_generator
        self.judge_generator = judge_generator
        self.text_embedder = text_embedder
        self.document_embedder = document_embedder
        self._corrector = Corrector.from_config(
            self.config, llm=as_llm(chat_generator), judge_llm=as_llm(judge_generator or chat_generator),
            evaluator=evaluator_for(self.config, text_embedder, document_embedder, instance))
        self._ready = False

    @property
    def corrector(self) -> Corrector:
        """The core `Corrector` this component runs (its evaluator is the judge `crag_haystack.calibrate` fits)."""
        return self._corrector

    def warm_up(self) -> None:
        """Load the evaluator's model, warm up the generator, and build the web search (resolving its secret)."""
        warm_up_all(self._corrector.evaluator, self.chat_generator, self.judge_generator, self.text_embedder,
                    self.document_embedder)
        if isinstance(self.web_search, _WebSearchComponent):
            self._corrector.web_search = self.web_search.provider
        else:
            self._corrector.web_search = self.web_search
        self._ready = True

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component (Haystack's `to_dict` contract; secrets as env var names only)."""
        if self.web_search is not None and not isinstance(self.web_search, _WebSearchComponent):
            raise TypeError(f"CRAG(web_search={type(self.web_search).__name__}(...)) cannot be saved: pass a "
                            "crag_haystack web-search component (SerpAPIWebSearch, ReplayWebSearch) to serialize")
        return default_to_dict(self, **nested_to_dicts(self, ("web_search", "judge_generator", *MODEL_PARTS)),
                               **{**self.config.to_dict(), "evaluator_options": self.evaluator_options},
                               device=self.device.to_dict() if self.device else None)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CRAG":
        """Rebuild the component from `to_dict`'s output."""
        deserialize_device(data["init_parameters"])
        return from_dict_with_nested(cls, data, ("web_search", "judge_generator", *MODEL_PARTS))

    def _outputs(self, result: CorrectionResult, span: Any) -> dict[str, Any]:
        span.set_tag("crag.action", result.action.value)
        span.set_tag("crag.scores", list(result.scores))
        span.set_tag("crag.abstained", result.abstained)
        span.set_tag("crag.strips", len(result.knowledge))
        outputs: dict[str, Any] = {"action": result.action.value, "scores": list(result.scores),
                                   "crag": CRAGReport.of(result)}
        if result.abstention is not None:
            outputs["abstention"] = result.abstention.reason
            return outputs
        documents = [strip_document(s, result.passages, result) for s in result.internal]
        documents += [strip_document(s, [], result) for s in result.external]
        return {"documents": documents, **outputs}

    def _passages(self, query: str, documents: list[Document], query_embedding: list[float] | None) -> list[Passage]:
        checked_query("CRAG", query)
        documents = checked_documents("CRAG", documents)
        if not self._ready:
            self.warm_up()
        return [to_passage(d) for d in documents]

    @component.output_types(**OUTPUTS)
    def run(self, query: str, documents: list[Document], *, query_embedding: list[float] | None = None
            ) -> dict[str, Any]:
        """
        :param query: the question the documents were retrieved for.
        :param documents: the retrieved documents (Haystack `Document`s, or their `to_dict()` form).
        :param query_embedding: the query's embedding, when the pipeline's text embedder already made one:
            `evaluator="embedding"` then does not embed the query again.
        :returns: `documents` (the knowledge) or `abstention` (why there is none), with `action`, `scores`
            and `crag` (the summary and the full trace).
        """
        passages = self._passages(query, documents, query_embedding)
        with (observed("correct", "CRAG", query) as span,
              query_embedding_for(self._corrector.evaluator, query, query_embedding)):
            return self._outputs(self._corrector.correct(query, passages), span)

    @component.output_types(**OUTPUTS)
    async def run_async(self, query: str, documents: list[Document], *, query_embedding: list[float] | None = None
                        ) -> dict[str, Any]:
        """Async `run`: model inference off the event loop; Ambiguous refines while it searches.

        :param query: the question the documents were retrieved for.
        :param documents: the retrieved documents.
        :param query_embedding: the query's embedding, if the pipeline already made one.
        :returns: as `run`.
        """
        passages = self._passages(query, documents, query_embedding)
        with (observed("correct", "CRAG", query) as span,
              query_embedding_for(self._corrector.evaluator, query, query_embedding)):
            return self._outputs(await self._corrector.acorrect(query, passages), span)


keep_earlier_type_string(CRAG, "crag")
