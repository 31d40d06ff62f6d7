"""The application's own Haystack web-search component (Tavily, Brave, DDGS, SerperDev, ...) as CRAG's web
source: its `documents`/`links` are the results; crag fetches the links with its guarded fetcher."""

import inspect
from typing import Any, Literal

from haystack import Document, component, default_to_dict

from crag_shared.adapter import FunctionSearch, PageFetcher, WebSearch

from ..integration import WEBSEARCH
from ..llm import warm_up_all
from ..serialization import current_type, from_dict_with_nested, nested_to_dicts
from .web_search import _WebSearchComponent


@component
class ComponentWebSearch(_WebSearchComponent):
    """Any web-search component with a `query` input and `documents` and/or `links` outputs, as CRAG's web
    search. Each document is a result (its `meta["link"]` or `meta["url"]`, `meta["title"]`, its content as
    the snippet); links without a document are results too. With `fetch_pages=True` (default) the pages
    are fetched through crag's SSRF-guarded fetcher and refined into paragraphs, else the documents'
    contents are the web knowledge. The wrapped component is serialized nested, as Haystack serializes it.

    Usage:

    ```python
    from haystack_integrations.components.websearch.tavily import TavilyWebSearch

    crag = CRAG(web_search=ComponentWebSearch(TavilyWebSearch(top_k=5)))   # or CRAG(web_search=TavilyWebSearch())
    ```
    """

    __module__ = WEBSEARCH  # its canonical, allowlisted home (see crag_haystack.integration)

    def __init__(self, search: Any, top_k: int = 5, fetch_pages: bool = True, mode: Literal["wiki", "all"] = "all",
                 fetch_timeout: float = 5.0, fetch_deadline: float = 10.0, timeout: float = 30.0,
                 allow_private_addresses: bool | list[str] = False, raise_on_failure: bool = False) -> None:
        """
        :param search: the web-search component (run(query=...) -> documents and/or links).
        :param top_k: result pages used per search.
        :param fetch_pages: fetch and extract the linked pages (else the documents' contents are used).
        :param mode: "all" keeps the component's order; "wiki" puts Wikipedia pages first, as the paper does.
        :param fetch_timeout: seconds per page request.
        :param fetch_deadline: seconds for all pages together.
        :param timeout: seconds for the component's search call.
        :param allow_private_addresses: lift the SSRF guard for pages (True, or networks).
        :param raise_on_failure: raise when the search fails, instead of the CRAG fallback.
        """
        run = getattr(search, "run", None)
        if not callable(run) or "query" not in inspect.signature(run).parameters:
            raise TypeError(f"ComponentWebSearch needs a component whose run() takes `query`, got "
                            f"{type(search).__name__}")
        self.search = search
        self.top_k = top_k
        self.fetch_pages = fetch_pages
        self.mode = mode
        self.fetch_timeout = fetch_timeout
        self.fetch_deadline = fetch_deadline
        self.timeout = timeout
        self.allow_private_addresses = allow_private_addresses
        self.raise_on_failure = raise_on_failure

    def _find(self, query: str) -> list[object]:
        return self._find_output(self.search.run(query=query))

    async def _afind(self, query: str) -> list[object]:
        return self._find_output(await self.search.run_async(query=query))

    def _find_output(self, output: object) -> list[object]:
        if not isinstance(output, dict) or not ({"documents", "links"} & output.keys()):
            raise TypeError(f"{type(self.search).__name__}.run returned no `documents` or `links`")
        found: list[object] = list(output.get("documents") or [])
        known = {d.meta.get("link") or d.meta.get("url") for d in found if isinstance(d, Document)}
        return found + [{"link": link} for link in output.get("links") or [] if link not in known]

    def warm_up(self) -> None:
        """Warm up the wrapped component, then build the search over it."""
        warm_up_all(self.search)
        _WebSearchComponent.warm_up(self)  # not super(): @component rebuilds the class

    def _build(self) -> WebSearch:
        fetcher = PageFetcher(timeout=self.fetch_timeout, deadline=self.fetch_deadline,
                              allow_private_addresses=self.allow_private_addresses)
        return FunctionSearch(self._find, afind=self._afind if hasattr(self.search, "run_async") else None,
                              name=type(self.search).__name__, fetcher=fetcher, fetch_pages=self.fetch_pages,
                              mode=self.mode, timeout=self.timeout)

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component, the wrapped one nested (Haystack's `to_dict` contract)."""
        return default_to_dict(self, **nested_to_dicts(self, ("search",)), top_k=self.top_k,
                               fetch_pages=self.fetch_pages, mode=self.mode, fetch_timeout=self.fetch_timeout,
                               fetch_deadline=self.fetch_deadline, timeout=self.timeout,
                               allow_private_addresses=self.allow_private_addresses,
                               raise_on_failure=self.raise_on_failure)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ComponentWebSearch":
        """Rebuild the component, and the wrapped one, from `to_dict`'s output."""
        return from_dict_with_nested(cls, current_type(cls, data), ("search",))
