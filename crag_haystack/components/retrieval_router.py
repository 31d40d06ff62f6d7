"""RetrievalRouter: scores retrieved documents and routes them to the `correct`, `incorrect` or
`ambiguous` output, so only the branch of the chosen action runs downstream. A thin call to
`Corrector.judge`: the decision is the core's, not a copy of it."""

from dataclasses import replace
from typing import Any

from haystack import Document, component, default_to_dict
from haystack.utils import ComponentDevice

from crag_shared.adapter import (
    Action,
    ActionPolicy,
    AmbiguousMode,
    Corrector,
    CRAGConfig,
    Judgment,
    OnWebFailure,
    RetrievalEvaluator,
    abstention_for,
    ambiguous_rule,
    closest_passage,
)

from ..convert import checked_documents, scored_copy, to_passage
from ..embedding import deserialize_device, evaluator_for, evaluator_setting, query_embedding_for
from ..integration import ROUTERS, keep_earlier_type_string
from ..lifecycle import Lifecycle
from ..llm import ChatGenerator, as_llm, warm_up_all
from ..logs import checked_query, observed
from ..serialization import MODEL_PARTS, from_dict_with_nested, nested_to_dicts

__all__ = ["OUTPUTS", "RetrievalRouter"]

OUTPUTS = {"correct": list[Document], "incorrect": list[Document], "ambiguous": list[Document],
           "discarded": list[Document], "abstention": str, "action": str, "scores": list[float], "web_query": str,
           "closest": str}
INCORRECT_RETRIEVAL = "the retrieved documents were judged irrelevant"


@component
class RetrievalRouter(Lifecycle):
    """CRAG's retrieval evaluator and action trigger (paper sections 4.2-4.3) as a routing component.

    Documents leave as copies carrying the evaluator's score (`score`, `meta["crag_score"]`),
    `meta["crag_action"]` and, from the LLM judge, which judge scored each (`meta["crag_judge"]`: "llm", or its
    offline partner's spec where it stood in; a `KnowledgeRefiner` keeps the strips of the passages the LLM
    accepted), exactly as `Corrector.judge` decides:
    - Correct / Ambiguous: the documents that go on to refinement (score ≥ lower, with text) leave on
      `correct` / `ambiguous`; the others on `discarded`;
    - Incorrect: the paper discards the documents: `incorrect` carries none (it only triggers its branch)
      and every document leaves on `discarded`; `abstention` says the retrieval gave no knowledge. In a
      pipeline without web search, route `abstention` to a `NoAnswerReply`; with one, route the web's
      outcome through a `KnowledgeGate` instead. `on_web_failure="keep"` sends the documents on
      `incorrect` (for the web search's `fallback_documents`) and emits no `abstention`.
    - Ambiguous documents carry the core's `AmbiguousRule` for their strips (`meta["crag_keep_at"]`, the
      floor, and `meta["crag_below_floor"]`), which the `KnowledgeGate` applies once the web's outcome is known.
    - An empty query is not judged: action "unjudged", the documents on `discarded`, and `abstention`.
    `action` and `scores` (input order; none when unjudged) are always emitted, and once judged `closest`, the
    passage that came closest in words (its title or place, score and what it lacks: the `KnowledgeGate` names
    it when it abstains); `web_query` (the query, for a rewriter) only when the action needs the web. An
    evaluator that fails while scoring is replaced by the lexical one, logged on Haystack's logger. A query
    that is not a string raises.

    Usage:

    ```python
    router = RetrievalRouter()  # the default judge: the reader blended with the lexical judge, for English
    out = router.run(query="When did the Golden Gate Bridge open?", documents=retrieved)
    out["action"], out.get("correct"), out["scores"]        # only the chosen action's output is emitted
    ```
    """

    __module__ = ROUTERS  # its canonical, allowlisted home (see crag_haystack.integration)

    def __init__(self, evaluator: str | RetrievalEvaluator = "auto", upper: float | None = None,
                 lower: float | None = None, thresholds_path: str | None = None, score_titles: bool = False,
                 chat_generator: ChatGenerator | None = None, text_embedder: Any | None = None,
                 document_embedder: Any | None = None, on_web_failure: OnWebFailure = "drop",
                 ambiguous: AmbiguousMode = "drop", evaluator_options: dict[str, Any] | None = None,
                 device: ComponentDevice | None = None, language: str = "en") -> None:
        """
        :param evaluator: an evaluator spec (`crag_shared.evaluators.EVALUATOR_SPECS`): "default" (crag's
            trained reader blended with the lexical judge, for English when `crag-shared[reader]` is installed, as this
            package installs it; else lexical), "reader", "lexical",
            "cross-encoder:PATH", "combined:lexical-minilm", "llm" (then `chat_generator` judges)...
            Components naming the same model share one loaded instance. Or a ready crag evaluator, saved as
            its spec and settings.
        :param evaluator_options: the evaluator's constructor settings as plain values, e.g.
            `{"max_length": 256, "batch_size": 16, "quantize": True}`.
        :param device: where a model evaluator runs, as Haystack components take it (`ComponentDevice`).
        :param upper: Correct when any score is at least this; default: the evaluator's own.
        :param lower: Incorrect when every score is below this; default: the evaluator's own.
        :param thresholds_path: thresholds JSON from `crag calibrate`; wins over `upper`/`lower`.
        :param score_titles: score "title: text" when a document has a title its text does not start with.
        :param chat_generator: a Haystack chat generator: judges the documents with `evaluator="auto"` (the
            default; without a generator "auto" is "default") or `"llm"`.
        :param text_embedder: with `evaluator="embedding"`, the pipeline's Haystack text embedder (queries).
        :param document_embedder: with `evaluator="embedding"`, its document embedder (passages, batched).
        :param on_web_failure: "drop" (Incorrect documents leave on `discarded`) or "keep" (on `incorrect`,
            to be kept if the web gives no knowledge).
        :param ambiguous: "drop" (an Ambiguous question's strips below the upper threshold are dropped when the
            web gives no knowledge) or "guard" (they go on marked unverified); stamped for the `KnowledgeGate`.
        :param language: what text is analyzed as, and whose follow-up table questions are read with: an
            ISO 639-1 code ("en", "zh", "ja", "de", ...) or "auto" (each question's language, detected).
        """
        self.on_web_failure = on_web_failure
        self.ambiguous = ambiguous
        spec, options, instance = evaluator_setting(evaluator, evaluator_options, device)
        self.evaluator = spec
        self.evaluator_options = evaluator_options if instance is None else options
        self.device = device
        self.upper = upper
        self.lower = lower
        self.thresholds_path = thresholds_path
        self.score_titles = score_titles
        self.language = language
        self.chat_generator = chat_generator
        self.text_embedder = text_embedder
        self.document_embedder = document_embedder
        config = CRAGConfig(evaluator=spec, evaluator_options=options,
                            upper=upper, lower=lower, thresholds_path=thresholds_path,
                            score_titles=score_titles, on_web_failure=on_web_failure, ambiguous=ambiguous,
                            language=language)
        self._corrector = Corrector.from_config(config, llm=as_llm(chat_generator),
                                       evaluator=evaluator_for(config, text_embedder, document_embedder, instance))

    def warm_up(self) -> None:
        """Load the evaluator's model (once per process for each model) and warm up the chat generator."""
        warm_up_all(self._corrector.evaluator, self.chat_generator, self.text_embedder, self.document_embedder)

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component (Haystack's `to_dict` contract; secrets as env var names only)."""
        return default_to_dict(self, evaluator=self.evaluator, evaluator_options=self.evaluator_options,
                               upper=self.upper, lower=self.lower,
                               thresholds_path=self.thresholds_path, score_titles=self.score_titles,
                               on_web_failure=self.on_web_failure, ambiguous=self.ambiguous, language=self.language,
                               device=self.device.to_dict() if self.device else None,
                               **nested_to_dicts(self, MODEL_PARTS))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RetrievalRouter":
        """Rebuild the component from `to_dict`'s output."""
        deserialize_device(data["init_parameters"])
        return from_dict_with_nested(cls, data, MODEL_PARTS)

    def _policy(self, upper: float | None, lower: float | None) -> ActionPolicy | None:
        if upper is None and lower is None:
            return None
        default = self._corrector.policy
        return ActionPolicy(default.upper if upper is None else upper, default.lower if lower is None else lower)

    def _route(self, query: str, documents: list[Document], judgment: Judgment, span: Any) -> dict[str, Any]:
        action = judgment.action
        span.set_tag("crag.action", action.value)
        span.set_tag("crag.scores", list(judgment.scores))
        if action is Action.UNJUDGED:
            return {"discarded": [replace(d, meta={**d.meta, "crag_action": action.value}) for d in documents],
                    "action": action.value, "scores": [], "abstention": abstention_for(action, None).reason}
        # what becomes of the Ambiguous strips depends on the web's outcome: the gate applies the core's rule
        corrector = self._corrector
        stamp = (ambiguous_rule(query, judgment.thresholds[0], corrector.on_web_failure, corrector.ambiguous,
                                corrector.question_language(query)).stamp() if action is Action.AMBIGUOUS else {})
        judges = judgment.judges
        routed = [scored_copy(d, s, crag_action=action.value, **stamp, **({"crag_judge": j} if j else {}))
                  for d, s, j in zip(documents, judgment.scores, judges)]
        keep_incorrect = action is Action.INCORRECT and self.on_web_failure == "keep"
        kept = set(range(len(documents))) if keep_incorrect else set(judgment.kept)
        closest = closest_passage(judgment.passages, judgment.scores, judgment.reasons)
        outputs: dict[str, Any] = {action.value: [d for i, d in enumerate(routed) if i in kept],
                                   "discarded": [d for i, d in enumerate(routed) if i not in kept],
                                   "action": action.value, "scores": list(judgment.scores), "closest": closest}
        if action is Action.INCORRECT and not keep_incorrect:
            outputs["abstention"] = f"{INCORRECT_RETRIEVAL}; {closest}" if closest else INCORRECT_RETRIEVAL
        if action is not Action.CORRECT:
            outputs["web_query"] = query
        return outputs

    def _checked(self, query: str, documents: object, query_embedding: list[float] | None) -> list[Document]:
        checked_query("RetrievalRouter", query)
        return checked_documents("RetrievalRouter", documents)

    @component.output_types(**OUTPUTS)
    def run(self, query: str, documents: list[Document], *, upper: float | None = None,
            lower: float | None = None, query_embedding: list[float] | None = None) -> dict[str, Any]:
        """
        :param query: the question the documents were retrieved for.
        :param documents: the retrieved documents, in retrieval order (or their `to_dict()` form).
        :param upper: this run's upper threshold (default: the component's).
        :param lower: this run's lower threshold (default: the component's).
        :param query_embedding: the query's embedding, when the pipeline's text embedder already made one:
            `evaluator="embedding"` then does not embed the query again.
        :returns: the documents, scored, on the chosen action's output (`correct`, `incorrect` or
            `ambiguous`; the rest on `discarded`), with `action`, `scores`, and `web_query` unless Correct;
            `abstention` when Incorrect retrieval is dropped.
        """
        documents = self._checked(query, documents, query_embedding)
        with (observed("judge", "RetrievalRouter", query) as span,
              query_embedding_for(self._corrector.evaluator, query, query_embedding)):
            judgment = self._corrector.judge(query, [to_passage(d) for d in documents],
                                             policy=self._policy(upper, lower))
            return self._route(query, documents, judgment, span)

    @component.output_types(**OUTPUTS)
    async def run_async(self, query: str, documents: list[Document], *, upper: float | None = None,
                        lower: float | None = None, query_embedding: list[float] | None = None
                        ) -> dict[str, Any]:
        """Async `run`: model inference runs off the event loop.

        :param query: the question the documents were retrieved for.
        :param documents: the retrieved documents.
        :param upper: this run's upper threshold.
        :param lower: this run's lower threshold.
        :param query_embedding: the query's embedding, if the pipeline already made one.
        :returns: as `run`.
        """
        documents = self._checked(query, documents, query_embedding)
        with (observed("judge", "RetrievalRouter", query) as span,
              query_embedding_for(self._corrector.evaluator, query, query_embedding)):
            judgment = await self._corrector.ajudge(query, [to_passage(d) for d in documents],
                                                    policy=self._policy(upper, lower))
            return self._route(query, documents, judgment, span)


keep_earlier_type_string(RetrievalRouter, "retrieval_router")
