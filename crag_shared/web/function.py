"""Web search through a search function the application already has (a framework's web-search component,
retriever or tool): crag fetches the links it finds with the guarded fetcher and refines them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from .search_engine import FetchingSearch

__all__ = ["TITLE_KEYS", "FunctionSearch"]

LINK_KEYS = ("link", "url", "href", "source_url", "source")
TITLE_KEYS = ("title", "name", "file_name")
SNIPPET_KEYS = ("snippet", "content", "body", "description", "text")


def as_result(item: object, owner: str) -> dict[str, Any]:
    """One found item as a search result (link, title, snippet): a dict, or an object with those attributes or
    a `metadata`/`meta` dict (LlamaIndex nodes, Haystack documents). An item of another kind is the
    function's programming error, named."""
    fields: dict[str, Any] = {}
    if isinstance(item, Mapping):
        fields = dict(item)
    elif item is not None and not isinstance(item, (str, bytes, int, float)):
        fields = dict(getattr(item, "metadata", None) or getattr(item, "meta", None) or {})
        for name in (*LINK_KEYS, *TITLE_KEYS, *SNIPPET_KEYS):
            value = getattr(item, name, None)
            if isinstance(value, str) and name not in fields:
                fields[name] = value
        text = getattr(item, "get_content", None)
        if callable(text) and "snippet" not in fields:
            fields["snippet"] = text()
    else:
        raise TypeError(f"{owner} returned a {type(item).__name__} where a search result (a dict with a link, or "
                        "a document or node with a url in its metadata) was expected")
    pick = lambda keys: next((fields[k] for k in keys if isinstance(fields.get(k), str) and fields[k]), "")  # noqa: E731
    return {"link": pick(LINK_KEYS), "title": pick(TITLE_KEYS), "snippet": pick(SNIPPET_KEYS)}


class FunctionSearch(FetchingSearch):
    """A `WebSearch` over `find(query)`, a function returning found items: dicts or documents carrying a
    link (`link`, `url`, `href` or `source_url`, itself or in its metadata), a title and a snippet.

    The links are fetched by the guarded `fetcher`, extracted and refined like any provider's results
    (`fetch_pages=False` keeps the snippets only). `afind`, when given, is the async form; without it
    `find` runs on this search's worker threads. `name` is how errors name the source. A `find` that
    raises fails the search (the corrector's fallback); one that returns something other than a list of
    such items raises `TypeError` naming it. Other options: see `FetchingSearch` (default `mode="all"`:
    the source's own order).
    """

    def __init__(self, find: Callable[[str], Any], *, afind: Callable[[str], Awaitable[Any]] | None = None,
                 name: str | None = None, **options: Any) -> None:
        if not callable(find) or (afind is not None and not callable(afind)):
            raise TypeError("FunctionSearch needs a callable find(query) (and afind, if given)")
        options.setdefault("mode", "all")
        super().__init__(**options)
        self.find = find
        self.afind = afind
        self.engine_name = name or getattr(find, "__qualname__", None) or type(find).__name__

    def __repr__(self) -> str:
        return f"FunctionSearch({self.engine_name})"

    def _results(self, found: object) -> list[dict[str, Any]]:
        if not isinstance(found, (list, tuple)):
            raise TypeError(f"{self.engine_name} returned {type(found).__name__}, not a list of search results")
        return [as_result(item, self.engine_name) for item in found]

    def organic_results(self, query: str) -> list[dict[str, Any]]:
        """What `find(query)` found, as search results."""
        return self._results(self.find(query))

    async def aorganic_results(self, query: str) -> list[dict[str, Any]]:
        """What `afind(query)` (else `find`, on a worker thread) found, as search results."""
        if self.afind is not None:
            return self._results(await self.afind(query))
        return await super().aorganic_results(query)
