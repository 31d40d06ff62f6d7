"""KnowledgeRefiner: documents → the few knowledge strips that matter for the query."""

from typing import Any, Literal

from haystack import Document, component, default_to_dict
from haystack.utils import ComponentDevice

from crag_shared.adapter import Corrector, CRAGConfig, Refinement, RefineMode, RetrievalEvaluator

from ..convert import checked_documents, strip_document, to_passage
from ..embedding import deserialize_device, evaluator_for, evaluator_setting
from ..integration import RANKERS, keep_earlier_type_string
from ..lifecycle import Lifecycle
from ..llm import ChatGenerator, as_llm, warm_up_all
from ..logs import observed, unusable_query
from ..serialization import MODEL_PARTS, from_dict_with_nested, nested_to_dicts


@component
class KnowledgeRefiner(Lifecycle):
    """Decompose → filter → recompose (paper section 4.4), as a component: a thin call to `Corrector.refine`.

    Each output Document keeps its source's meta and adds `crag_score`, `crag_origin`, `crag_source_id`,
    `crag_position`, `crag_start`/`crag_end`. An empty query cannot be refined against: as Haystack's
    rankers do, the documents then pass through unchanged, with a warning.

    Usage:

    ```python
    refiner = KnowledgeRefiner(refine_mode="excerption", strip_top_k=5)
    strips = refiner.run(query="When did the Golden Gate Bridge open?", documents=documents)["documents"]
    ```
    """

    __module__ = RANKERS  # its canonical, allowlisted home (see crag_haystack.integration)

    def __init__(self, evaluator: str | RetrievalEvaluator = "auto",
                 refine_mode: RefineMode = "excerption", strip_top_k: int = 5,
                 strip_threshold: float = -0.5, origin: Literal["internal", "web"] = "internal",
                 score_titles: bool = False, chat_generator: ChatGenerator | None = None,
                 text_embedder: Any | None = None, document_embedder: Any | None = None,
                 max_strip_chars: int = 2_000, evaluator_options: dict[str, Any] | None = None,
                 device: ComponentDevice | None = None, language: str = "en") -> None:
        """
        :param evaluator: a spec as in `RetrievalRouter`; components naming one model share it. Or a ready
            crag evaluator, saved as its spec and settings.
        :param evaluator_options: the evaluator's constructor settings as plain values, e.g.
            `{"max_length": 256, "batch_size": 16, "quantize": True}`.
        :param device: where a model evaluator runs, as Haystack components take it (`ComponentDevice`).
        :param refine_mode: "excerption" (sentence groups), "fixed_num" (50-word windows) or "selection"
            (whole documents, the right mode for web page paragraphs).
        :param strip_top_k: at most this many strips are kept, in original order.
        :param strip_threshold: strips scoring below this are dropped.
        :param origin: "web" marks the strips as web knowledge (`crag_origin`).
        :param score_titles: score "title: text" when a document has a title its text does not start with.
        :param chat_generator: a Haystack chat generator: judges the documents with `evaluator="auto"` (the
            default; without a generator "auto" is "default") or `"llm"`.
        :param text_embedder: with `evaluator="embedding"`, the pipeline's Haystack text embedder (queries).
        :param document_embedder: with `evaluator="embedding"`, its document embedder (passages, batched).
        :param max_strip_chars: no strip is longer; text without sentence punctuation is cut at word boundaries.
        :param language: what text is analyzed as: an ISO 639-1 code ("en", "zh", "ja", "de", ...) or "auto"
            (each question's language, detected).
        """
        if origin not in ("internal", "web"):
            raise ValueError(f"origin must be 'internal' or 'web', got {origin!r}")
        spec, options, instance = evaluator_setting(evaluator, evaluator_options, device)
        self.evaluator = spec
        self.evaluator_options = evaluator_options if instance is None else options
        self.device = device
        self.refine_mode = refine_mode
        self.strip_top_k = strip_top_k
        self.strip_threshold = strip_threshold
        self.origin = origin
        self.score_titles = score_titles
        self.max_strip_chars = max_strip_chars
        self.language = language
        self.chat_generator = chat_generator
        config = CRAGConfig(evaluator=spec, evaluator_options=options,
                            refine_mode=refine_mode, web_refine_mode=refine_mode,
                            strip_top_k=strip_top_k, strip_threshold=strip_threshold, score_titles=score_titles,
                            max_strip_chars=max_strip_chars, language=language)
        self.text_embedder = text_embedder
        self.document_embedder = document_embedder
        self._corrector = Corrector.from_config(config, llm=as_llm(chat_generator),
                                       evaluator=evaluator_for(config, text_embedder, document_embedder, instance))

    def warm_up(self) -> None:
        """Load the evaluator's model (once per process for each model) and warm up the chat generator."""
        warm_up_all(self._corrector.evaluator, self.chat_generator, self.text_embedder, self.document_embedder)

    @property
    def thresholds(self) -> tuple[float, float]:
        """(upper, lower): the judge's thresholds, against which its strips' scores are read."""
        return self._corrector.evaluator.thresholds

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component (Haystack's `to_dict` contract; secrets as env var names only)."""
        return default_to_dict(self, evaluator=self.evaluator, evaluator_options=self.evaluator_options,
                               refine_mode=self.refine_mode,
                               strip_top_k=self.strip_top_k, strip_threshold=self.strip_threshold, origin=self.origin,
                               score_titles=self.score_titles, max_strip_chars=self.max_strip_chars,
                               language=self.language,
                               device=self.device.to_dict() if self.device else None,
                               **nested_to_dicts(self, MODEL_PARTS))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "KnowledgeRefiner":
        """Rebuild the component from `to_dict`'s output."""
        deserialize_device(data["init_parameters"])
        return from_dict_with_nested(cls, data, MODEL_PARTS)

    def _outputs(self, refinement: Refinement, documents: list[Document], span: Any) -> dict[str, Any]:
        span.set_tag("crag.strips", len(refinement.strips))
        span.set_tag("crag.strip_scores", [s.score for s in refinement.strips])
        passages = [to_passage(d) for d in documents]
        return {"documents": [strip_document(s, passages) for s in refinement.strips]}

    @component.output_types(documents=list[Document])
    def run(self, query: str, documents: list[Document], *, strip_top_k: int | None = None) -> dict[str, Any]:
        """
        :param query: the question the strips are judged against.
        :param documents: the documents to refine (or their `to_dict()` form).
        :param strip_top_k: this run's number of strips to keep (default: the component's).
        :returns: `documents`: the kept strips as Documents, in original order, with provenance meta.
        """
        documents = checked_documents("KnowledgeRefiner", documents)
        if unusable_query("KnowledgeRefiner", query):
            return {"documents": list(documents)}
        with observed("refine", "KnowledgeRefiner", query) as span:
            refinement = self._corrector.refine(query, [to_passage(d) for d in documents], web=self.origin == "web",
                                                top_k=strip_top_k, judged=judged(documents))
            return self._outputs(refinement, documents, span)

    @component.output_types(documents=list[Document])
    async def run_async(self, query: str, documents: list[Document], *, strip_top_k: int | None = None
                        ) -> dict[str, Any]:
        """Async `run`: model inference runs off the event loop.

        :param query: the question the strips are judged against.
        :param documents: the documents to refine.
        :param strip_top_k: this run's number of strips to keep.
        :returns: as `run`.
        """
        documents = checked_documents("KnowledgeRefiner", documents)
        if unusable_query("KnowledgeRefiner", query):
            return {"documents": list(documents)}
        with observed("refine", "KnowledgeRefiner", query) as span:
            refinement = await self._corrector.arefine(query, [to_passage(d) for d in documents],
                                                       web=self.origin == "web", top_k=strip_top_k,
                                                       judged=judged(documents))
            return self._outputs(refinement, documents, span)


def judged(documents: list[Document]) -> list[tuple[float, str] | None]:
    """Each document's (score, judge) as a `RetrievalRouter` stamped it, None where it was not judged there."""
    return [(float(d.meta["crag_score"]), d.meta["crag_judge"])
            if isinstance(d.meta.get("crag_judge"), str) and isinstance(d.meta.get("crag_score"), (int, float))
            else None for d in documents]


keep_earlier_type_string(KnowledgeRefiner, "knowledge_refiner")
