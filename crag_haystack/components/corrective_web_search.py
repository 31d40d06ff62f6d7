"""CorrectiveWebSearch: a web search that judges what it found, as the CRAG pipeline's web branch does: a
tool for Haystack's Agent that hands on web strips with a verdict, never a page about the wrong entity as
plain knowledge."""

from typing import Any

from haystack import Document, component, default_to_dict

from crag_shared.adapter import web_summary

from ..integration import WEBSEARCH
from ..serialization import from_dict_with_nested, nested_to_dicts
from .knowledge_refiner import KnowledgeRefiner

OUTPUTS = {"documents": list[Document], "abstention": str, "action": str, "scores": list[float],
           "links": list[str], "issues": list[str], "crag": dict[str, Any]}


def web_refiner(**settings: Any) -> KnowledgeRefiner:
    """The refiner of web paragraphs, as the CRAG pipeline's web branch has it: whole paragraphs
    ("selection"), marked as web knowledge; `settings` are `KnowledgeRefiner`'s others."""
    return KnowledgeRefiner(refine_mode="selection", origin="web", **settings)


@component
class CorrectiveWebSearch:
    """Searches the web with your web search component, then refines the page paragraphs the way the CRAG
    pipeline's web branch does (`web_refiner()`: each paragraph scored by the judge, those under the strip
    threshold dropped, the best `strip_top_k` kept).

    Outputs `documents` (the web strips, with `crag_score`), `action` (what the judge's thresholds make of
    the strips' scores: "ambiguous" when none reaches the upper threshold, e.g. a page about a namesake),
    `scores`, `links`, `issues`, `crag` (the verdict as a summary dict) and, when no strip is left,
    `abstention` (why). As an Agent tool, `knowledge_text` turns this into a verdict line and the strips.

    Usage:
    ```python
    from haystack.tools import ComponentTool
    from crag_haystack import CorrectiveWebSearch, SerpAPIWebSearch, knowledge_text

    web = CorrectiveWebSearch(SerpAPIWebSearch())
    tool = ComponentTool(component=web, name="search_web", outputs_to_string={"handler": knowledge_text},
                         description="Search the web; returns judged strips and CRAG's verdict.")
    ```
    """

    __module__ = WEBSEARCH  # its canonical, allowlisted home (see crag_haystack.integration)

    def __init__(self, web_search: Any, refiner: KnowledgeRefiner | None = None) -> None:
        """
        :param web_search: a web search component taking `query` and returning `documents` (crag's
            `SerpAPIWebSearch`, `ProviderWebSearch`, `ComponentWebSearch`...).
        :param refiner: the refiner of the paragraphs (default: `web_refiner()`, lexical judge).
        """
        if not callable(getattr(web_search, "run", None)):
            raise TypeError(f"web_search must be a Haystack web search component, got {type(web_search).__name__}")
        if refiner is not None and not isinstance(refiner, KnowledgeRefiner):
            raise TypeError(f"refiner must be a crag_haystack KnowledgeRefiner, got {type(refiner).__name__}")
        self.web_search = web_search
        self.refiner = refiner or web_refiner()

    def warm_up(self) -> None:
        """Warm up the web search (its provider) and the refiner (its judge)."""
        for part in (self.web_search, self.refiner):
            warm_up = getattr(part, "warm_up", None)
            if callable(warm_up):
                warm_up()

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component: the web search and the refiner, nested."""
        return default_to_dict(self, **nested_to_dicts(self, ('web_search', 'refiner')))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CorrectiveWebSearch":
        """Rebuild the component from `to_dict`'s output."""
        return from_dict_with_nested(cls, data, ('web_search', 'refiner'))

    def _outputs(self, found: dict[str, Any], strips: list[Document]) -> dict[str, Any]:
        scores = [float(d.meta["crag_score"]) for d in strips]
        issues = list(found.get("issues") or [])
        summary = web_summary(scores, self.refiner.thresholds, issues[-1] if issues and not found.get("documents")
                              else None)
        outputs = {"documents": strips, "action": summary.action, "scores": scores,
                   "links": list(found.get("links") or []), "issues": issues, "crag": summary.to_dict()}
        if summary.abstention is not None:
            outputs["abstention"] = summary.abstention.reason
        return outputs

    @component.output_types(**OUTPUTS)
    def run(self, query: str) -> dict[str, Any]:
        """
        :param query: what to search the web for (the agent's question or keywords).
        :returns: `documents` (judged web strips), `action`, `scores`, `links`, `issues`, `crag` and, when no
            strip is left, `abstention`.
        """
        found = self.web_search.run(query=query)
        paragraphs = found.get("documents") or []
        strips = self.refiner.run(query=query, documents=paragraphs)["documents"] if paragraphs else []
        return self._outputs(found, strips)

    @component.output_types(**OUTPUTS)
    async def run_async(self, query: str) -> dict[str, Any]:
        """Async `run`: the search and the judge run without blocking the event loop.

        :param query: what to search the web for.
        :returns: as `run`.
        """
        search = getattr(self.web_search, "run_async", None)
        found = await search(query=query) if search is not None else self.web_search.run(query=query)
        paragraphs = found.get("documents") or []
        strips = (await self.refiner.run_async(query=query, documents=paragraphs))["documents"] if paragraphs else []
        return self._outputs(found, strips)
