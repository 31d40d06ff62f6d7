"""build_crag_pipeline: retrieval → evaluation → the three action branches → joiner → prompt → generator."""

from __future__ import annotations

from typing import Any

from haystack import Pipeline
from haystack.components.builders import ChatPromptBuilder
from haystack.components.joiners import DocumentJoiner
from haystack.dataclasses import ChatMessage

from .components import KnowledgeRefiner, QueryRewriter, RetrievalEvaluator

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
                        strip_top_k: int = 5, strip_threshold: float = -0.5) -> Pipeline:
    """A CRAG pipeline whose graph shows the paper's three actions as branches.

    - `retriever` (its input `query`) → `evaluator` (RetrievalEvaluator) routes the documents:
      `correct` and `ambiguous` → `internal_refiner`; `web_query` (Incorrect/Ambiguous only) →
      `rewriter` → `web_search` → `web_refiner`; `incorrect` → `web_search.fallback_documents`, kept
      (flagged) if the web fails. Without `web_search`, Incorrect documents go straight to the joiner,
      flagged by their `crag_action` meta.
    - `evaluator="llm"` judges with `judge_generator`; `rewriter_generator` writes the search keywords
      (offline keyword extraction without one).
    - `joiner` → `prompt_builder` (ChatPromptBuilder; `template` replaces the default, which tells the
      LLM to say it does not know when no knowledge survived) → `generator` (any chat generator).
    Run it with `pipeline.run({"query": question})`: the flat input reaches the retriever, the evaluator,
    the refiners and the prompt. The result holds `generator.replies`, `evaluator.action`,
    `evaluator.scores` and, when the web was used, `web_search.links` and `web_search.issues`.
    """
    pipeline = Pipeline()
    pipeline.add_component("retriever", retriever)
    pipeline.add_component("evaluator", RetrievalEvaluator(evaluator=evaluator, upper=upper, lower=lower,
                                                           thresholds_path=thresholds_path,
                                                           chat_generator=judge_generator))
    pipeline.add_component("internal_refiner", KnowledgeRefiner(evaluator=evaluator, mode=refine_mode,
                                                                top_k=strip_top_k, threshold=strip_threshold,
                                                                chat_generator=judge_generator))
    pipeline.add_component("joiner", DocumentJoiner(join_mode="concatenate", sort_by_score=False))
    pipeline.add_component("prompt_builder", ChatPromptBuilder(template=template or DEFAULT_TEMPLATE,
                                                               required_variables=["query"]))
    pipeline.add_component("generator", generator)
    pipeline.connect("retriever.documents", "evaluator.documents")
    pipeline.connect("evaluator.correct", "internal_refiner.documents")
    pipeline.connect("evaluator.ambiguous", "internal_refiner.documents")
    pipeline.connect("internal_refiner.documents", "joiner.documents")
    if web_search is not None:
        pipeline.add_component("rewriter", QueryRewriter(chat_generator=rewriter_generator))
        pipeline.add_component("web_search", web_search)
        pipeline.add_component("web_refiner", KnowledgeRefiner(mode="selection", top_k=strip_top_k,
                                                               threshold=strip_threshold, origin="web"))
        pipeline.connect("evaluator.web_query", "rewriter.query")
        pipeline.connect("rewriter.search_query", "web_search.query")
        pipeline.connect("evaluator.incorrect", "web_search.fallback_documents")
        pipeline.connect("web_search.documents", "web_refiner.documents")
        pipeline.connect("web_refiner.documents", "joiner.documents")
        pipeline.connect("web_search.fallback", "joiner.documents")
    else:
        pipeline.connect("evaluator.incorrect", "joiner.documents")
    pipeline.connect("joiner.documents", "prompt_builder.documents")
    pipeline.connect("prompt_builder.prompt", "generator.messages")
    return pipeline
