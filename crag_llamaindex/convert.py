"""NodeWithScore ↔ the core's Passage and Strip: the only place the two data models meet."""

from __future__ import annotations

from llama_index.core.schema import MetadataMode, NodeRelationship, NodeWithScore, TextNode

from crag_shared import CorrectionResult, Origin, Passage, Strip
from crag_shared.config import passage_from_record, strip_metadata


def to_passage(item: NodeWithScore) -> Passage:
    node = item.node
    return passage_from_record(node.get_content(metadata_mode=MetadataMode.NONE), node.node_id, node.metadata,
                               item.score)


def strip_node(strip: Strip, result: CorrectionResult, sources: list[NodeWithScore]) -> NodeWithScore:
    """A strip as a new TextNode; its SOURCE relationship points at the node it was cut from."""
    metadata = strip_metadata(strip, result)
    node = TextNode(
        id_=f"crag:{strip.source_id}:{strip.position}:{strip.start}",
        text=strip.text,
        metadata=metadata,
        excluded_llm_metadata_keys=[k for k in metadata if k.startswith("crag_")],
        excluded_embed_metadata_keys=list(metadata),
    )
    if strip.origin is Origin.INTERNAL:
        node.relationships[NodeRelationship.SOURCE] = sources[strip.source_index].node.as_related_node_info()
    return NodeWithScore(node=node, score=strip.score)


def knowledge_nodes(result: CorrectionResult, sources: list[NodeWithScore], return_strips: bool) -> list[NodeWithScore]:
    """The knowledge as nodes: strips (default), or the original nodes that yielded internal knowledge
    (untouched, scored by the evaluator) followed by the web strips."""
    if return_strips:
        return [strip_node(s, result, sources) for s in result.knowledge]
    used = sorted({s.source_index for s in result.internal})
    originals = [NodeWithScore(node=sources[i].node, score=result.scores[i]) for i in used]
    return originals + [strip_node(s, result, sources) for s in result.external]
