"""CRAGReport: the `crag` output of the CRAG component, typed so Haystack can snapshot and resume it."""

from typing import Any

from crag_shared.adapter import CorrectionResult, Summary, verdict_html

from .integration import RANKERS


class CRAGReport(Summary):
    """CRAG's verdict on one query: the action, scores, abstention, web URLs, strips' provenance and first
    words, the retrieved passages as judged, fallbacks and the whole trace: the core's one summary shape,
    `Summary`, declared once, at its Haystack home.

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

    @classmethod
    def of(cls, result: CorrectionResult) -> "CRAGReport":
        """The report of one correction."""
        return cls.model_validate(result.to_dict())

    def summary(self) -> Summary:
        """The report as the core's one summary shape, which it is (the verdict line and the card read it)."""
        return self

    def _repr_html_(self) -> str:
        """Jupyter's view: a compact card (action, scores and thresholds, passages, strips, web, fallbacks)."""
        return verdict_html(self.summary())

    def __getitem__(self, key: str) -> Any:
        """`report["action"]`, `report["abstention"]["reason"]`: a field's JSON form, as the dict this output
        used to be."""
        if key not in type(self).model_fields and key not in type(self).model_computed_fields:
            raise KeyError(key)
        return self.model_dump(mode="json", include={key})[key]

    def get(self, key: str, default: Any = None) -> Any:
        """`report.get("action")`, as on a dict."""
        return self[key] if key in type(self).model_fields or key in type(self).model_computed_fields else default
