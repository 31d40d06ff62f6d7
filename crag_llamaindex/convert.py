"""NodeWithScore ↔ the core's Passage and Strip: the only place the two data models meet."""

from __future__ import annotations

from llama_index.core.schema import MetadataMode, NodeRelationship, NodeWithScore, TextNode

from crag_shared.adapter import CorrectionResult, Origin, Passage, Strip, passage_from_record, strip_metadata


def to_passage(item: NodeWithScore) -> Passage:
    """A node or document as a `Passage` (text, id, title and URL from its metadata, score)."""
    node = item.node
    return passage_from_record(node.get_content(metadata_mode=MetadataMode.NONE), node.node_id, node.metadata,
                               item.score)


def strip_node(strip: Strip, result: CorrectionResult, sources: list[NodeWithScore]) -> NodeWithScore:
    """A strip as a new TextNode carrying its source node's metadata, exclusions and document link.

    An internal strip's SOURCE relationship is its source node's own (so `ref_doc_id` is the Document's
    id, as on the chunk), and PARENT points at the chunk it was cut from; a chunk with no SOURCE of its
    own becomes the SOURCE. The `crag_*` keys are kept out of the LLM prompt and every CRAG key out of
    embeddings; `web_source` (web strips) is shown to the LLM to mark the text as untrusted."""
    source = sources[strip.source_index].node if strip.origin is Origin.INTERNAL else None
    added = strip_metadata(strip, result)
    metadata = {**(source.metadata if source else {}), **added}
    layout = {"metadata_template": source.metadata_template, "metadata_separator": source.metadata_separator
              } if source else {}
    node = TextNode(
        id_=f"crag:{strip.source_id}:{strip.position}:{strip.start}",
        text=strip.text,
        metadata=metadata,
        excluded_llm_metadata_keys=_merge(source and source.excluded_llm_metadata_keys,
                                          [k for k in added if k.startswith("crag_")]),
        excluded_embed_metadata_keys=_merge(source and source.excluded_embed_metadata_keys, list(added)),
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


def knowledge_nodes(result: CorrectionResult, sources: list[NodeWithScore], return_strips: bool) -> list[NodeWithScore]:
    """The knowledge as nodes: strips (default), or the original nodes that yielded internal knowledge
    (untouched, scored by the evaluator) followed by the web strips."""
    if return_strips:
        return [strip_node(s, result, sources) for s in result.knowledge]
    used = sorted({s.source_index for s in result.internal})
    originals = [NodeWithScore(node=sources[i].node, score=result.scores[i]) for i in used]
    return originals + [strip_node(s, result, sources) for s in result.external]
