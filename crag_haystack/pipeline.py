"""build_crag_pipeline: retrieval → evaluation → the three action branches → joiner → prompt → generator."""

from __future__ import annotations

from typing import Any, Literal

from haystack import Pipeline
from haystack.components.builders import ChatPromptBuilder
from haystack.components.joiners import DocumentJoiner
from haystack.dataclasses import ChatMessage

from .components import KnowledgeRefiner, RetrievalRouter, SearchQueryRewriter

DEFAULT_TEMPLATE = [ChatMessage.from_user(
    "{% if documents %}Answer the question using only the knowledge below, and cite the sources you use.\n"
    "Knowledge:\n{% for doc in documents %}- {{ doc.content }}"
    "{% if doc.meta.url %} ({{ doc.meta.url }}){% elif doc.meta.title %} ({{ doc.meta.title }}){% endif %}\n"
    "{% endfor %}{% else %}No reliable knowledge was found for this question. Say that you do not know; "
    "do not guess.\n{% endif %}Question: {{ query }}\nAnswer:")]


def build_crag_pipeline(retriever: Any, generator: Any, *, web_search: Any | None = None,
                        rewriter_generator: Any | None = None, judge_generator: Any | None = None,
                        template: list[ChatMessage] | None = None,
                        evaluator: str = "lexical", upper: float | None = None, lower: float | None = None,
                        thresholds_path: str | None = None, refine_mode: str = "excerption",
                        strip_top_k: int = 5, strip_threshold: float = -0.5, score_titles: bool = False,
                        on_web_failure: Literal["keep", "drop"] = "keep") -> Pipeline:
    """A CRAG pipeline whose graph shows the paper's three actions as branches.

    Every decision is the core's: the evaluator component is `Corrector.judge`, the refiners are
    `Corrector.refine`, all with one evaluator instance, so a question gets the same action, scores and
    knowledge as through `Corrector.correct` or the `CRAG` component.
    - `retriever` (its input `query`) → `evaluator` (RetrievalRouter) routes the documents:
      `correct` → `correct_refiner` and `ambiguous` → `ambiguous_refiner` (the documents scoring
      ≥ lower; one input has one sender, as every Haystack 2.x allows); `web_query`
      (Incorrect/Ambiguous only) → `rewriter` → `web_search` → `web_refiner`; `incorrect` →
      `web_search.fallback_documents`: if the web fails, `fallback_refiner` keeps their best strips
      (flagged `crag_fallback`), as the core does. Without `web_search`, Incorrect documents go to
      `fallback_refiner` directly. `on_web_failure="drop"` leaves them out instead.
    - `evaluator="llm"` judges with `judge_generator`; `rewriter_generator` writes the search keywords
      (offline keyword extraction without one).
    - `joiner` → `prompt_builder` (ChatPromptBuilder; `template` replaces the default, which tells the
      LLM to say it does not know when no knowledge survived) → `generator` (any chat generator).
    Run it with `pipeline.run({"query": question})`: the flat input reaches the retriever, the evaluator,
    the refiners and the prompt. The result holds `generator.replies`, `evaluator.action`,
    `evaluator.scores` and, when the web was used, `web_search.links` and `web_search.issues`.
    """
    def refiner(origin: str, threshold: float = strip_threshold) -> KnowledgeRefiner:
        return KnowledgeRefiner(evaluator=evaluator, refine_mode=refine_mode if origin == "internal" else "selection",
                                strip_top_k=strip_top_k, strip_threshold=threshold, origin=origin,
                                score_titles=score_titles, chat_generator=judge_generator)

    pipeline = Pipeline()
    pipeline.add_component("retriever", retriever)
    pipeline.add_component("evaluator", RetrievalRouter(evaluator=evaluator, upper=upper, lower=lower,
                                                           thresholds_path=thresholds_path, score_titles=score_titles,
                                                           chat_generator=judge_generator))
    pipeline.add_component("correct_refiner", refiner("internal"))
    pipeline.add_component("ambiguous_refiner", refiner("internal"))
    pipeline.add_component("fallback_refiner", refiner("internal", threshold=-1.0))
    pipeline.add_component("joiner", DocumentJoiner(join_mode="concatenate", sort_by_score=False))
    pipeline.add_component("prompt_builder", ChatPromptBuilder(template=template or DEFAULT_TEMPLATE,
                                                               required_variables=["query"]))
    pipeline.add_component("generator", generator)
    pipeline.connect("retriever.documents", "evaluator.documents")
    pipeline.connect("evaluator.correct", "correct_refiner.documents")
    pipeline.connect("evaluator.ambiguous", "ambiguous_refiner.documents")
    pipeline.connect("correct_refiner.documents", "joiner.documents")
    pipeline.connect("ambiguous_refiner.documents", "joiner.documents")
    pipeline.connect("fallback_refiner.documents", "joiner.documents")
    if web_search is not None:
        pipeline.add_component("rewriter", SearchQueryRewriter(chat_generator=rewriter_generator))
        pipeline.add_component("web_search", web_search)
        pipeline.add_component("web_refiner", refiner("web"))
        pipeline.connect("evaluator.web_query", "rewriter.query")
        pipeline.connect("rewriter.search_query", "web_search.query")
        pipeline.connect("evaluator.incorrect", "web_search.fallback_documents")
        pipeline.connect("web_search.documents", "web_refiner.documents")
        pipeline.connect("web_refiner.documents", "joiner.documents")
        if on_web_failure == "keep":
            pipeline.connect("web_search.fallback", "fallback_refiner.documents")
    elif on_web_failure == "keep":
        pipeline.connect("evaluator.incorrect", "fallback_refiner.documents")
    pipeline.connect("joiner.documents", "prompt_builder.documents")
    pipeline.connect("prompt_builder.prompt", "generator.messages")
    return pipeline
