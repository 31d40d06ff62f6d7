"""RetrievalRouter: scores retrieved documents and routes them to the `correct`, `incorrect` or
`ambiguous` output, so only the branch of the chosen action runs downstream. A thin call to
`Corrector.judge`: the decision is the core's, not a copy of it."""

from typing import Any

from haystack import Document, component, default_to_dict

from crag_shared import Action, ActionPolicy, CRAGConfig, Judgment

from ..convert import scored_copy, to_passage
from ..embedding import evaluator_for
from ..lifecycle import Lifecycle
from ..llm import ChatGenerator, as_llm, warm_up_all
from ..logs import log_fallbacks, unusable_query
from ..serialization import MODEL_PARTS, from_dict_with_nested, nested_to_dicts

OUTPUTS = {"correct": list[Document], "incorrect": list[Document], "ambiguous": list[Document],
           "discarded": list[Document], "action": str, "scores": list[float], "web_query": str}


@component
class RetrievalRouter(Lifecycle):
    """CRAG's retrieval evaluator and action trigger (paper sections 4.2-4.3) as a routing component.

    Documents leave as copies carrying the evaluator's score (`score`, `meta["crag_score"]`) and
    `meta["crag_action"]`, exactly as `Corrector.judge` decides:
    - Correct / Ambiguous: the documents that go on to refinement (score ≥ lower, with text) leave on
      `correct` / `ambiguous`; the others on `discarded`;
    - Incorrect: every document leaves on `incorrect` (the web search's fallback if the web fails).
    `action` and `scores` (input order) are always emitted; `web_query` (the query, for a rewriter) only
    when the action needs the web. An evaluator that fails while scoring is replaced by the lexical one,
    logged on Haystack's logger. An empty query cannot be judged: as Haystack's rankers do, the documents
    then pass through unchanged on `correct`, with a warning.
    """

    def __init__(self, evaluator: str = "lexical", upper: float | None = None, lower: float | None = None,
                 thresholds_path: str | None = None, score_titles: bool = False,
                 chat_generator: ChatGenerator | None = None, text_embedder: Any | None = None,
                 document_embedder: Any | None = None) -> None:
        """
        :param evaluator: "lexical", "t5:PATH", "cross-encoder:PATH", "onnx:PATH" or "llm" (then
            `chat_generator` judges). Components naming the same model share one loaded instance.
        :param upper: Correct when any score is at least this; default: the evaluator's own.
        :param lower: Incorrect when every score is below this; default: the evaluator's own.
        :param thresholds_path: thresholds JSON from `crag calibrate`; wins over `upper`/`lower`.
        :param score_titles: score "title: text" when a document has a title its text does not start with.
        :param chat_generator: a Haystack chat generator, for `evaluator="llm"`.
        :param text_embedder: with `evaluator="embedding"`, the pipeline's Haystack text embedder (queries).
        :param document_embedder: with `evaluator="embedding"`, its document embedder (passages, batched).
        """
        self.evaluator = evaluator
        self.upper = upper
        self.lower = lower
        self.thresholds_path = thresholds_path
        self.score_titles = score_titles
        self.chat_generator = chat_generator
        self.text_embedder = text_embedder
        self.document_embedder = document_embedder
        config = CRAGConfig(evaluator=evaluator, upper=upper, lower=lower, thresholds_path=thresholds_path,
                            score_titles=score_titles)
        self._corrector = config.build(llm=as_llm(chat_generator),
                                       evaluator=evaluator_for(config, text_embedder, document_embedder))

    def warm_up(self) -> None:
        """Load the evaluator's model (once per process for each model) and warm up the chat generator."""
        warm_up_all(self._corrector.evaluator, self.chat_generator, self.text_embedder, self.document_embedder)

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, evaluator=self.evaluator, upper=self.upper, lower=self.lower,
                               thresholds_path=self.thresholds_path, score_titles=self.score_titles,
                               **nested_to_dicts(self, MODEL_PARTS))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RetrievalRouter":
        return from_dict_with_nested(cls, data, MODEL_PARTS)

    def _policy(self, upper: float | None, lower: float | None) -> ActionPolicy | None:
        if upper is None and lower is None:
            return None
        default = self._corrector.policy
        return ActionPolicy(default.upper if upper is None else upper, default.lower if lower is None else lower)

    @staticmethod
    def _route(query: str, documents: list[Document], judgment: Judgment) -> dict[str, Any]:
        log_fallbacks("RetrievalRouter", judgment.trace.fallbacks)
        action = judgment.action
        routed = [scored_copy(d, s, crag_action=action.value) for d, s in zip(documents, judgment.scores)]
        kept = set(range(len(documents))) if action is Action.INCORRECT else set(judgment.kept)
        outputs: dict[str, Any] = {action.value: [d for i, d in enumerate(routed) if i in kept],
                                   "discarded": [d for i, d in enumerate(routed) if i not in kept],
                                   "action": action.value, "scores": list(judgment.scores)}
        if action is not Action.CORRECT:
            outputs["web_query"] = query
        return outputs

    @staticmethod
    def _unjudged(documents: list[Document]) -> dict[str, Any]:
        return {"correct": list(documents), "action": Action.CORRECT.value, "scores": []}

    @component.output_types(**OUTPUTS)
    def run(self, query: str, documents: list[Document], upper: float | None = None,
            lower: float | None = None) -> dict[str, Any]:
        """
        :param query: the question the documents were retrieved for.
        :param documents: the retrieved documents, in retrieval order.
        :param upper: this run's upper threshold (default: the component's).
        :param lower: this run's lower threshold (default: the component's).
        """
        if unusable_query("RetrievalRouter", query):
            return self._unjudged(documents)
        judgment = self._corrector.judge(query, [to_passage(d) for d in documents], policy=self._policy(upper, lower))
        return self._route(query, documents, judgment)

    @component.output_types(**OUTPUTS)
    async def run_async(self, query: str, documents: list[Document], upper: float | None = None,
                        lower: float | None = None) -> dict[str, Any]:
        """Async `run`: model inference runs off the event loop."""
        if unusable_query("RetrievalRouter", query):
            return self._unjudged(documents)
        judgment = await self._corrector.ajudge(query, [to_passage(d) for d in documents],
                                                policy=self._policy(upper, lower))
        return self._route(query, documents, judgment)
