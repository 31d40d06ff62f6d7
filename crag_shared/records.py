"""Framework records (LlamaIndex nodes, Haystack documents) and the core types: what every adapter reads
from a record and writes onto one, in one place so the two adapters cannot drift apart."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .types import CorrectionResult, Passage, Strip

#: What an adapter answers when CRAG abstains (no knowledge at all), instead of letting the LLM guess; the
#: response's CRAG metadata says why.
NO_KNOWLEDGE_ANSWER = "I could not find reliable information to answer this question."

#: What the LLM is told when CRAG abstains and the user chose to ask it anyway (no context at all).
NO_CONTEXT_INSTRUCTION = ("No reliable information was found for the question below: the retrieved passages were "
                          "judged irrelevant and no other source was available. Say that you could not find the "
                          "answer; do not guess.")

TITLE_KEYS = ("title", "document_title", "file_name", "filename", "name")
URL_KEYS = ("url", "link", "source_url", "source", "file_path")


def passage_from_record(text: str | None, id: str | None, metadata: Mapping[str, Any] | None,
                        score: float | None = None) -> Passage:
    """A framework node/document as a Passage: title and URL taken from the usual metadata keys."""
    metadata = dict(metadata or {})
    title = next((str(metadata[k]) for k in TITLE_KEYS if metadata.get(k)), None)
    url = next((str(metadata[k]) for k in URL_KEYS if metadata.get(k)), None)
    return Passage(text, id=id, title=title, url=url, score=score, metadata=metadata)


def strip_metadata(strip: Strip, result: CorrectionResult | None = None) -> dict[str, Any]:
    """Metadata every adapter adds to a knowledge strip, on top of its source's own metadata: the score,
    full provenance, the page of a web strip and, when the strip comes from a whole correction, its
    action and any fallback taken. Internal strips get no title/url here: their source's keys (file_name,
    file_path, page_label...) travel unchanged."""
    metadata: dict[str, Any] = {
        "crag_score": strip.score,
        "crag_origin": strip.origin.value,
        "crag_source_id": strip.source_id,
        "crag_position": strip.position,
        "crag_start": strip.start,
        "crag_end": strip.end,
    }
    if strip.source_label:  # web strips: their page; internal strips keep their source's own metadata
        metadata["title"] = strip.title
        metadata["url"] = strip.url
        metadata["web_source"] = strip.source_label  # shown to the LLM beside the text
    if result is None:
        return metadata
    metadata["crag_action"] = result.action.value
    if result.fallbacks:
        metadata["crag_fallbacks"] = [f"{f.step}: {f.reason} -> {f.applied}" for f in result.fallbacks]
    return metadata


def result_metadata(result: CorrectionResult) -> dict[str, Any]:
    """What adapters expose about one correction: the summary plus the whole trace."""
    return {**result.summary(), "trace": result.trace.to_dict()}
