"""Haystack Document ↔ the core's Passage and Strip: the only place the two data models meet."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from haystack import Document

from crag_shared.adapter import (
    CorrectionResult,
    Passage,
    Strip,
    neutralized,
    passage_from_record,
    source_metadata,
    strip_metadata,
)


def checked_documents(component: str, documents: object) -> list[Document]:
    """The documents a component judges. Dicts in Haystack's `Document.to_dict()` form (what hayhooks and
    REST clients send) become Documents; anything else that is not a Document raises here, naming it."""
    if not isinstance(documents, (list, tuple)):
        raise TypeError(f"{component}: documents must be a list of Haystack Documents, got "
                        f"{type(documents).__name__}")
    checked = []
    for i, document in enumerate(documents):
        if isinstance(document, dict):
            document = Document.from_dict(document)
        if not isinstance(document, Document):
            hint = " (wrap texts as Document(content=...))" if isinstance(document, str) else ""
            raise TypeError(f"{component}: documents[{i}] is a {type(document).__name__}, not a Haystack "
                            f"Document{hint}")
        checked.append(document)
    return checked


def to_passage(document: Document) -> Passage:
    """A node or document as a `Passage` (text, id, title and URL from its metadata, score)."""
    return passage_from_record(document.content, document.id, document.meta, document.score)


def scored_copy(document: Document, score: float, **meta: Any) -> Document:
    """A copy with the evaluator's score and CRAG meta; the user's Document is never mutated."""
    return replace(document, score=score, meta={**document.meta, "crag_score": score, **meta})


def strip_document(strip: Strip, sources: list[Passage], result: CorrectionResult | None = None) -> Document:
    """A strip as a new Document: the source's meta, then provenance (`crag_source_id`, span, url...); where
    the source is a `DocumentSplitter` chunk (`split_idx_start`), also the span in the original Document."""
    source_meta = sources[strip.source_index].metadata if strip.source_index < len(sources) else {}
    meta = {**source_metadata(source_meta), **strip_metadata(strip, result, source_meta)}
    offset = source_meta.get("split_idx_start")  # where DocumentSplitter's chunk starts in its Document
    if isinstance(offset, int) and not isinstance(offset, bool):
        meta["crag_document_start"], meta["crag_document_end"] = offset + strip.start, offset + strip.end
    untrusted = strip.unverified or meta.get("crag_origin") == "web"  # its own block delimiters neutralized
    return Document(content=neutralized(strip.text) if untrusted else strip.text, meta=meta, score=strip.score)


def passage_document(passage: Passage, **meta: Any) -> Document:
    """A web passage (page paragraph or snippet) as a Document with its title and URL."""
    base = {"title": passage.title, "url": passage.url, "crag_origin": "web", "crag_source_id": passage.id}
    return Document(content=passage.text, meta={**base, **meta})
