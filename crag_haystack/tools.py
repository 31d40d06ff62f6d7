"""What Haystack's Agent reads from a CRAG tool (`ComponentTool` or `PipelineTool`): the core's compact tool
text (a verdict line, then the knowledge), never the strips' metadata."""

from collections.abc import Mapping
from typing import Any

from haystack import Document

from crag_shared.adapter import UNVERIFIED_KEY, Abstention, Summary, SummaryStrip, ToolStrip, tool_text

from .report import CRAGReport


def _summary(outputs: Mapping[str, Any]) -> Summary:
    """The tool's verdict: its `crag` output (a `CRAGReport`, or `CorrectiveWebSearch`'s summary dict), else one
    made of its other outputs (the abstention's code is then unknown: "")."""
    report = outputs.get("crag")
    if isinstance(report, CRAGReport):
        return report.summary()
    if report is not None:
        return Summary.from_dict(report)
    abstention = outputs.get("abstention")
    documents = outputs.get("documents") or []
    if not documents and not abstention:
        abstention = "nothing retrieved"
    return Summary(action=outputs.get("action") or "unjudged", scores=list(outputs.get("scores") or []),
                   abstention=Abstention("", str(abstention)) if abstention else None,
                   strips=[SummaryStrip(float(score), str(d.meta.get("crag_origin") or "internal"), d.content or "",
                                        unverified=UNVERIFIED_KEY in d.meta)
                           for d in documents if isinstance(score := d.meta.get("crag_score", d.score), (int, float))])


def _strip(document: Document) -> ToolStrip:
    score = document.meta.get("crag_score", document.score)
    return ToolStrip(document.content or "", document.meta.get("web_source"), score, UNVERIFIED_KEY in document.meta)


def knowledge_text(outputs: Mapping[str, Any]) -> str:
    """A CRAG tool's outputs as the text an agent's LLM reads: one verdict line (the action, the best score
    against the thresholds, or why there is no knowledge), then one "- " line per strip (web strips with
    their page, "weak" below the upper threshold). Reads `CorrectiveRetriever` and `CorrectiveWebSearch`
    outputs, and a `PipelineTool`'s whose output mapping names `documents`, `abstention` and `crag`:

    ```python
    ComponentTool(component=CorrectiveRetriever(retriever), outputs_to_string={"handler": knowledge_text}, ...)
    ```
    """
    documents = [] if outputs.get("abstention") else list(outputs.get("documents") or [])
    return tool_text(_summary(outputs), [_strip(d) for d in documents])
