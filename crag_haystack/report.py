"""CRAGReport: the `crag` output of the CRAG component, typed so Haystack can snapshot and resume it."""

from typing import Any

from pydantic import BaseModel, ConfigDict

from crag_shared.adapter import CorrectionResult, Summary, verdict_html

from .integration import RANKERS


class CRAGReport(BaseModel):
    """CRAG's verdict on one query: the action, scores, abstention, web URLs, strips' provenance and first
    words, the retrieved passages as judged, fallbacks and the whole trace (the fields of the core's one
    summary shape, `Summary`; `report.summary()` is that typed summary).

    A typed model, not a free-form dict: Haystack's pipeline snapshots (breakpoints) infer a dict's schema
    from its first list item, and the trace's steps differ in shape; a model is saved and read back whole.
    `report["action"]` works as on a dict; `report.model_dump()` is the plain dict.

    Usage:
    ```python
    result = pipeline.run({"query": question})
    result["crag"]["crag"].action, result["crag"]["crag"]["scores"]
    ```
    """

    __module__ = RANKERS  # snapshots name it by this allowlisted home (see crag_haystack.integration)
    model_config = ConfigDict(frozen=True, extra="forbid")

    action: str
    abstained: bool
    abstention: dict[str, str] | None
    web_missing: str | None
    scores: list[float]
    thresholds: dict[str, float]
    rewritten_query: str | None
    web_urls: list[str]
    strips: list[dict[str, Any]]
    fallbacks: list[dict[str, Any]]
    passages: list[dict[str, Any]]
    trace: dict[str, Any]
    judge: str | None = None

    @classmethod
    def of(cls, result: CorrectionResult) -> "CRAGReport":
        """The report of one correction."""
        return cls(**result.to_dict())

    def summary(self) -> Summary:
        """The report in the core's one typed summary shape, as the verdict line and the card read it."""
        return Summary.from_dict(self.model_dump())

    def _repr_html_(self) -> str:
        """Jupyter's view: a compact card (action, scores and thresholds, passages, strips, web, fallbacks)."""
        return verdict_html(self.summary())

    def __getitem__(self, key: str) -> Any:
        """`report["action"]`, as the dict this output used to be."""
        if key not in type(self).model_fields:
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        """`report.get("action")`, as on a dict."""
        return self[key] if key in type(self).model_fields else default
