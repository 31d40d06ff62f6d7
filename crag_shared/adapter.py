"""Everything a framework adapter takes from the core, in one module: the core's types and parts it
translates to and from, and the helpers that read framework records (LlamaIndex nodes, Haystack
documents) and write CRAG's metadata onto them, so the two adapters cannot drift apart.

The adapters import from this module only; anything they need from the core is added here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .calibration import QACalibration, QAPair, calibrate_qa, read_qa
from .config import AmbiguousMode, CRAGConfig, OnWebFailure, RefineMode
from .corrector import NO_WEB_SEARCH, Corrector, abstention_for
from .corrector.configured import evaluator_settings
from .corrector.outcome import read_search
from .corrector.verdicts import closest_passage
from .evaluators import EmbeddingEvaluator, LLMEvaluator, RetrievalEvaluator, embedding_unit, evaluator_kind
from .evaluators.judge_prompt import check_judge_prompt
from .evaluators.spec import describe, evaluator_options, evaluator_spec
from .llm import NoLLMConfigured
from .policy import ActionPolicy, AmbiguousRule, ambiguous_rule
from .recorded import RecordedLLM, RecordingMissing
from .rewrite import PAPER_REWRITE_PROMPT, QueryRewriter, Rewrite, keyword_query
from .summary import Abstention, Fallback, Summary, SummaryStrip, Verdict, label_line, verdict_html
from .trace import logging_to
from .types import (
    UNVERIFIED_END,
    UNVERIFIED_NOTE,
    Action,
    CorrectionResult,
    Judgment,
    Origin,
    Passage,
    Refinement,
    Strip,
    WebOutcome,
    WebSearchResponse,
    neutralized,
    unverified_mark,
)
from .verdict import ToolStrip, result_tool_text, tool_text, verdict_line, web_summary
from .web.base import WebSearch
from .web.replay import ReplaySearch
from .web.spec import PROVIDERS as WEB_PROVIDERS
from .web.spec import web_search_from_spec

_LAZY_WEB = ("FunctionSearch", "PageFetcher", "SerpAPISearch")


def __getattr__(name: str) -> Any:
    """Network providers load on first use (they import httpx)."""
    if name in _LAZY_WEB:
        from . import web

        return getattr(web, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: What an adapter answers when CRAG abstains (no knowledge at all), instead of letting the LLM guess; the
#: response's CRAG metadata says why.
NO_KNOWLEDGE_ANSWER = "I could not find reliable information to answer this question."

#: What the LLM is told when CRAG abstains and the user chose to ask it anyway (no context at all).
NO_CONTEXT_INSTRUCTION = ("No reliable information was found for the question below: the retrieved passages were "
                          "judged irrelevant and no other source was available. Say that you could not find the "
                          "answer; do not guess.")

#: The metadata key of a strip CRAG could not verify (`ambiguous="guard"`): its value, `UNVERIFIED_NOTE`, is
#: shown to the LLM beside the text (LlamaIndex's metadata line, the Haystack template's mark).
UNVERIFIED_KEY = "unverified"


def no_knowledge_why(reason: str) -> str:
    """CRAG's abstention in words a reader (and an LLM) understands: that no reliable knowledge was found, and
    why. Haystack's `NoAnswerReply` and the LlamaIndex drop-in's abstention node say it."""
    return f"CRAG found no reliable knowledge for this question: {' '.join(reason.split()).rstrip('.')}."


def abstention_note(reason: str) -> str:
    """What an LLM reads in place of knowledge when CRAG abstained inside a prompt crag does not own (the
    LlamaIndex drop-in): why there is none, and the instruction to say so rather than answer."""
    return (f"{no_knowledge_why(reason)} Say that the answer was not found and why; do not answer from other "
            "knowledge.")


TITLE_KEYS = ("title", "document_title", "file_name", "filename", "name")
URL_KEYS = ("url", "link", "source_url", "source", "file_path")


def passage_from_record(text: str | None, id: str | None, metadata: Mapping[str, Any] | None,
                        score: float | None = None) -> Passage:
    """A framework node/document as a Passage: title and URL taken from the usual metadata keys."""
    metadata = dict(metadata or {})
    title = next((str(metadata[k]) for k in TITLE_KEYS if metadata.get(k)), None)
    url = next((str(metadata[k]) for k in URL_KEYS if metadata.get(k)), None)
    return Passage(text, id=id, title=title, url=url, score=score, metadata=metadata)


#: The metadata keys prompts show as CRAG's word: a source's own copy is never carried over to a strip (a stored
#: document's `unverified` or `web_source` would read as if CRAG had set it). CRAG's bookkeeping (`crag_*`) is
#: never shown to the LLM and travels, as the Haystack components stamp it for each other.
CRAG_KEYS = (UNVERIFIED_KEY, "web_source")


def source_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """A source's metadata as a strip carries it: everything but the keys only CRAG sets (`CRAG_KEYS`)."""
    return {k: v for k, v in (metadata or {}).items() if k not in CRAG_KEYS}


def strip_metadata(strip: Strip, result: CorrectionResult | None = None,
                   source: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Metadata every adapter adds to a knowledge strip, on top of its source's own metadata (`source`): the
    score, full provenance, the page of a web strip and, when the strip comes from a whole correction, its
    action and any fallback taken. Internal strips get no title/url here: their source's keys (file_name,
    file_path, page_label...) travel unchanged. A passage that was a web strip once (written to a store,
    retrieved again: its `crag_origin` is "web") keeps that origin, so its text stays marked untrusted."""
    stored_web = strip.origin is Origin.INTERNAL and source is not None and source.get("crag_origin") == "web"
    metadata: dict[str, Any] = {
        "crag_score": strip.score,
        "crag_origin": "web" if stored_web else strip.origin.value,
        "crag_source_id": strip.source_id,
        "crag_position": strip.position,
        "crag_start": strip.start,
        "crag_end": strip.end,
    }
    if strip.source_label:  # web strips: their page; internal strips keep their source's own metadata
        metadata["title"] = strip.title
        metadata["url"] = strip.url
        metadata["web_source"] = strip.source_label  # shown to the LLM beside the text
    elif stored_web:  # CRAG's own word that the stored text came from the web, never the source's copy of it
        metadata["web_source"] = f"{label_line(str((source or {}).get('url') or 'a stored page'))} (untrusted web page)"
    if strip.unverified:
        metadata[UNVERIFIED_KEY] = UNVERIFIED_NOTE  # shown to the LLM beside the text
    if result is None:
        return metadata
    metadata["crag_action"] = result.action.value
    if result.fallbacks:
        metadata["crag_fallbacks"] = [str(f) for f in result.fallbacks]
    return metadata


def result_metadata(result: CorrectionResult) -> dict[str, Any]:
    """What adapters expose about one correction: the summary plus the whole trace (a dict that Jupyter
    shows as a card)."""
    return Verdict(result.to_dict())


def config_from(value: CRAGConfig | Mapping[str, Any]) -> CRAGConfig:
    """A CRAGConfig from itself or from its dict form (as `to_dict`, `model_dump` and YAML write it)."""
    if isinstance(value, CRAGConfig):
        return value
    if isinstance(value, Mapping):
        return CRAGConfig.from_dict(value)
    raise TypeError(f"config must be a CRAGConfig or a dict of its settings, got {type(value).__name__}")


def saved_evaluator(evaluator: RetrievalEvaluator) -> tuple[str, dict[str, Any] | None]:
    """(spec, evaluator_options) an evaluator instance is saved as, so a saved config rebuilds the evaluator
    really used, settings included. One that no spec and plain options can rebuild (your own class, a
    setting that is a function or a model object) is saved as `custom:MODULE.CLASS`, which fails loudly
    when loaded, naming the class: pass the instance again."""
    try:
        return evaluator_spec(evaluator), evaluator_options(evaluator) or None
    except NotImplementedError:
        return f"custom:{type(evaluator).__module__}.{type(evaluator).__qualname__}", None


__all__ = [
    "CRAG_KEYS",
    "NO_CONTEXT_INSTRUCTION",
    "NO_KNOWLEDGE_ANSWER",
    "NO_WEB_SEARCH",
    "PAPER_REWRITE_PROMPT",
    "TITLE_KEYS",
    "UNVERIFIED_END",
    "UNVERIFIED_KEY",
    "UNVERIFIED_NOTE",
    "URL_KEYS",
    "WEB_PROVIDERS",
    "Abstention",
    "Action",
    "ActionPolicy",
    "AmbiguousMode",
    "AmbiguousRule",
    "CRAGConfig",
    "CorrectionResult",
    "Corrector",
    "EmbeddingEvaluator",
    "Fallback",
    "Judgment",
    "LLMEvaluator",
    "NoLLMConfigured",
    "OnWebFailure",
    "Origin",
    "Passage",
    "QACalibration",
    "QAPair",
    "QueryRewriter",
    "RecordedLLM",
    "RecordingMissing",
    "RefineMode",
    "Refinement",
    "ReplaySearch",
    "RetrievalEvaluator",
    "Rewrite",
    "Strip",
    "Summary",
    "SummaryStrip",
    "ToolStrip",
    "Verdict",
    "WebOutcome",
    "WebSearch",
    "WebSearchResponse",
    "abstention_for",
    "abstention_note",
    "ambiguous_rule",
    "calibrate_qa",
    "check_judge_prompt",
    "closest_passage",
    "config_from",
    "describe",
    "embedding_unit",
    "evaluator_kind",
    "evaluator_settings",
    "keyword_query",
    "logging_to",
    "neutralized",
    "no_knowledge_why",
    "passage_from_record",
    "read_qa",
    "read_search",
    "result_metadata",
    "result_tool_text",
    "saved_evaluator",
    "source_metadata",
    "strip_metadata",
    "tool_text",
    "unverified_mark",
    "verdict_html",
    "verdict_line",
    "web_search_from_spec",
    "web_summary",
]
