"""NodeWithScore ↔ the core's Passage and Strip: the only place the two data models meet."""

from __future__ import annotations

from llama_index.core.schema import BaseNode, ImageNode, MetadataMode, NodeRelationship, NodeWithScore, TextNode

from crag_shared.adapter import (
    UNVERIFIED_END,
    UNVERIFIED_KEY,
    UNVERIFIED_NOTE,
    CorrectionResult,
    Origin,
    Passage,
    Strip,
    abstention_note,
    neutralized,
    passage_from_record,
    result_metadata,
    source_metadata,
    strip_metadata,
)

__all__ = ["abstention_node", "knowledge_nodes", "strip_node", "to_passage", "unjudgeable", "verdict_node"]

#: The id of the node that carries CRAG's verdict (an abstention, or the verdict on knowledge handed on): LlamaIndex
#: keys a response's metadata by its source nodes' ids, the last node of an id winning, so the drop-in's response
#: reads `response.metadata["crag"]`, as `CRAGQueryEngine`'s does, whatever ids the user's nodes have.
VERDICT_NODE_ID = "crag"


def to_passage(item: NodeWithScore) -> Passage:
    """A node or document as a `Passage` (text, id, title and URL from its metadata, score)."""
    node = item.node
    return passage_from_record(node.get_content(metadata_mode=MetadataMode.NONE), node.node_id, node.metadata,
                               item.score)


def unjudgeable(item: NodeWithScore) -> bool:
    """A node CRAG cannot judge and must not drop: an image (or any non-text node) without text. A text
    node with empty text carries nothing and is simply skipped."""
    node = item.node
    textless = not node.get_content(metadata_mode=MetadataMode.NONE).strip()
    return textless and (isinstance(node, ImageNode) or not isinstance(node, TextNode))


def strip_node(strip: Strip, result: CorrectionResult | None, sources: list[NodeWithScore],
               keep_retrieval_score: bool = False) -> NodeWithScore:
    """A strip as a new TextNode carrying its source node's metadata, exclusions, templates and document link.

    An internal strip's SOURCE relationship is its source node's own (so `ref_doc_id` is the Document's
    id, as on the chunk), and PARENT points at the chunk it was cut from; a chunk with no SOURCE of its
    own becomes the SOURCE. `start_char_idx`/`end_char_idx` locate the strip in what SOURCE points at:
    the document when the chunk has offsets of its own, else the chunk. The `crag_*` keys are kept out
    of the LLM prompt and every CRAG key out of embeddings; `web_source` (web strips) is shown to the LLM
    to mark the text as untrusted, `unverified` (`ambiguous="guard"`) to tell it to answer from the strip
    only if it states the answer. `keep_retrieval_score` adds the source node's retrieval score as
    `retrieval_score`, as LlamaIndex's rerankers do."""
    item = sources[strip.source_index] if strip.origin is Origin.INTERNAL else None
    source = item.node if item else None
    added = strip_metadata(strip, result, source.metadata if source is not None else None)
    if keep_retrieval_score and item is not None:
        added["retrieval_score"] = item.score
    metadata = {**source_metadata(source.metadata if source else None), **added}
    layout: dict = {}
    if source is not None:
        offset = getattr(source, "start_char_idx", None)
        layout = {"metadata_template": source.metadata_template, "metadata_separator": source.metadata_separator,
                  "text_template": getattr(source, "text_template", TextNode.model_fields["text_template"].default),
                  "start_char_idx": (offset or 0) + strip.start, "end_char_idx": (offset or 0) + strip.end}
    if strip.unverified:  # its text between the mark (metadata, shown first) and an end it cannot write
        template = layout.get("text_template", TextNode.model_fields["text_template"].default)
        layout["text_template"] = f"{template}\n{UNVERIFIED_END}"
    node = TextNode(
        id_=f"crag:{strip.source_id}:{strip.position}:{strip.start}",
        text=strip.text if added["crag_origin"] == "internal" and not strip.unverified else neutralized(strip.text),
        metadata=metadata,
        excluded_llm_metadata_keys=_merge(source.excluded_llm_metadata_keys if source is not None else None,
                                          [k for k in added if k.startswith("crag_")]),
        excluded_embed_metadata_keys=_merge(source.excluded_embed_metadata_keys if source is not None else None,
                                            [k for k in added if k != "retrieval_score"]),
        **layout,
    )
    if source is not None:
        document = source.relationships.get(NodeRelationship.SOURCE)
        node.relationships[NodeRelationship.SOURCE] = document or source.as_related_node_info()
        if document is not None:
            node.relationships[NodeRelationship.PARENT] = source.as_related_node_info()
    return NodeWithScore(node=node, score=strip.score)


def _merge(first: list[str] | None, second: list[str]) -> list[str]:
    return list(dict.fromkeys([*(first or []), *second]))


def knowledge_nodes(result: CorrectionResult, sources: list[NodeWithScore], return_strips: bool,
                    keep_retrieval_score: bool = False) -> list[NodeWithScore]:
    """The knowledge as nodes: strips (default), or the original nodes that yielded internal knowledge
    (their content untouched, scored by the evaluator; one whose strips are all unverified carries the
    mark) followed by the web strips."""
    if return_strips:
        return [strip_node(s, result, sources, keep_retrieval_score) for s in result.knowledge]
    used = sorted({s.source_index for s in result.internal})
    unverified = {i for i in used if all(s.unverified for s in result.internal if s.source_index == i)}
    originals = [NodeWithScore(node=_original(sources[i], keep_retrieval_score, i in unverified),
                               score=result.scores[i]) for i in used]
    return originals + [strip_node(s, result, sources) for s in result.external]


def _original(item: NodeWithScore, retrieval_score: bool, unverified: bool) -> BaseNode:
    """The node itself, or a copy with its retrieval score and the unverified mark in metadata (the user's
    node is never changed)."""
    added = {**({"retrieval_score": item.score} if retrieval_score else {}),
             **({UNVERIFIED_KEY: UNVERIFIED_NOTE} if unverified else {})}
    own = source_metadata(item.node.metadata)
    if not added and len(own) == len(item.node.metadata):
        return item.node
    return item.node.model_copy(update={"metadata": {**own, **added}})


def abstention_node(result: CorrectionResult) -> NodeWithScore:
    """A CRAG abstention as the one node a query engine's synthesizer gets: its text tells the LLM that CRAG
    found no reliable knowledge and why (`abstention_note`), none of the rejected passages' text; its
    metadata is CRAG's verdict (the summary and the trace), kept out of the prompt and of embeddings."""
    if result.abstention is None:
        raise ValueError("abstention_node takes a correction that abstained (result.abstained)")
    return _verdict_node(result, abstention_note(result.abstention.reason))


def verdict_node(result: CorrectionResult) -> NodeWithScore:
    """CRAG's verdict on knowledge it handed on, as a node without text (the LLM reads nothing of it) whose
    metadata is the verdict, so a response reads `response.metadata["crag"]` for answered questions too."""
    return _verdict_node(result, "")


def _verdict_node(result: CorrectionResult, text: str) -> NodeWithScore:
    verdict = dict(result_metadata(result))
    return NodeWithScore(node=TextNode(id_=VERDICT_NODE_ID, text=text, metadata=verdict,
                                       excluded_llm_metadata_keys=list(verdict),
                                       excluded_embed_metadata_keys=list(verdict)))
