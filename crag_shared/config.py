"""Everything adapters share: a serializable CRAG configuration, and the edge conversions to and from it.

Framework adapters keep only this plain config in their serialized form (`model_dump`, `to_dict`); live
objects (LLM clients, web providers with keys) are passed separately and never serialized.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

from .corrector import Corrector
from .evaluators import evaluator_from_spec
from .evaluators.base import RetrievalEvaluator
from .llm import LLM
from .policy import ActionPolicy
from .refine import StripRefiner
from .rewrite import QueryRewriter
from .types import CorrectionResult, Passage, Strip
from .web.base import WebSearch

#: What an adapter answers when CRAG kept no knowledge at all, instead of letting the LLM guess.
NO_KNOWLEDGE_ANSWER = ("I could not find reliable information to answer this question: the retrieved "
                       "passages were judged irrelevant and no web knowledge was available.")

TITLE_KEYS = ("title", "document_title", "file_name", "filename", "name")
URL_KEYS = ("url", "link", "source_url", "source", "file_path")


@dataclass
class CRAGConfig:
    """The knobs of one CRAG corrector, as plain values.

    `evaluator` is a spec: "lexical", "t5:PATH_OR_ID", "cross-encoder:PATH_OR_ID", "llm" or
    "llm:per_document" (the LLM judge, using the adapter's LLM). Thresholds: `thresholds_path` (JSON
    from `crag calibrate`) wins over `upper`/`lower`; a threshold left as None takes the evaluator's
    default.
    """

    evaluator: str = "lexical"
    upper: float | None = None
    lower: float | None = None
    thresholds_path: str | None = None
    refine_mode: Literal["fixed_num", "excerption", "selection"] = "excerption"
    strip_top_k: int = 5
    strip_threshold: float = -0.5
    web_top_k: int = 5
    on_web_failure: Literal["keep", "drop"] = "keep"
    score_titles: bool = False

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "CRAGConfig":
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown CRAG settings: {sorted(unknown)}; known: {sorted(known)}")
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def policy(self, evaluator: RetrievalEvaluator) -> ActionPolicy:
        if self.thresholds_path:
            return ActionPolicy.load(self.thresholds_path)
        default_upper, default_lower = evaluator.thresholds
        return ActionPolicy(default_upper if self.upper is None else self.upper,
                            default_lower if self.lower is None else self.lower)

    def make_evaluator(self, llm: LLM | None = None) -> RetrievalEvaluator:
        kind, _, mode = self.evaluator.partition(":")
        if kind.strip().lower() == "llm":
            from .evaluators.llm import LLMEvaluator

            if llm is None:
                raise ValueError("evaluator='llm' needs an LLM: pass llm=... to the adapter")
            return LLMEvaluator(llm, mode=mode or "batched")
        return evaluator_from_spec(self.evaluator)

    def build(self, *, llm: LLM | None = None, web_search: WebSearch | None = None,
              evaluator: RetrievalEvaluator | None = None) -> Corrector:
        """A Corrector with this configuration; `llm` serves the rewriter (and the LLM judge if chosen)."""
        evaluator = evaluator or self.make_evaluator(llm)
        return Corrector(
            evaluator=evaluator,
            policy=self.policy(evaluator),
            refiner=StripRefiner(self.refine_mode, top_k=self.strip_top_k, threshold=self.strip_threshold),
            rewriter=QueryRewriter(llm),
            web_search=web_search,
            web_top_k=self.web_top_k,
            on_web_failure=self.on_web_failure,
            score_titles=self.score_titles,
        )


def passage_from_record(text: str | None, id: str | None, metadata: Mapping[str, Any] | None,
                        score: float | None = None) -> Passage:
    """A framework node/document as a Passage: title and URL taken from the usual metadata keys."""
    metadata = dict(metadata or {})
    title = next((str(metadata[k]) for k in TITLE_KEYS if metadata.get(k)), None)
    url = next((str(metadata[k]) for k in URL_KEYS if metadata.get(k)), None)
    return Passage(text, id=id, title=title, url=url, score=score, metadata=metadata)


def strip_metadata(strip: Strip, result: CorrectionResult | None = None) -> dict[str, Any]:
    """Metadata every adapter attaches to a knowledge strip: the score, full provenance and, when the strip
    comes from a whole correction, its action and any fallback taken."""
    metadata: dict[str, Any] = {
        "crag_score": strip.score,
        "crag_origin": strip.origin.value,
        "crag_source_id": strip.source_id,
        "crag_position": strip.position,
        "crag_start": strip.start,
        "crag_end": strip.end,
    }
    if strip.title:
        metadata["title"] = strip.title
    if strip.url:
        metadata["url"] = strip.url
    if result is None:
        return metadata
    metadata["crag_action"] = result.action.value
    if result.fallbacks:
        metadata["crag_fallbacks"] = [f"{f.step}: {f.reason} -> {f.applied}" for f in result.fallbacks]
    return metadata


def result_metadata(result: CorrectionResult) -> dict[str, Any]:
    """What adapters expose about one correction: the summary plus the whole trace."""
    return {**result.summary(), "trace": result.trace.to_dict()}
