"""A LlamaIndex retriever or a tool spec's search function as CRAG's web source."""

from __future__ import annotations

from typing import Any

from llama_index.core.retrievers import BaseRetriever

from crag_shared.adapter import FunctionSearch, WebSearch


def web_source(source: Any, **options: Any) -> WebSearch:
    """`source` as CRAG's web search: a crag provider as it is; a retriever (a web retriever, or any whose
    nodes carry a `url`/`link` in their metadata) or a search function returning such documents or
    dicts (a tool spec's `search`, e.g. `TavilyToolSpec(api_key=...).search`) through `FunctionSearch`:
    the links are fetched by crag's guarded fetcher and refined, the node or document text is the snippet
    fallback. `options` go to `FunctionSearch` (`fetch_pages=False` to use the texts as they are, a
    `fetcher`, `mode`, `timeout`). Anything else is a TypeError naming it."""
    if isinstance(source, WebSearch):
        return source
    if isinstance(source, BaseRetriever):
        return FunctionSearch(source.retrieve, afind=source.aretrieve, name=type(source).__name__, **options)
    if callable(source):
        return FunctionSearch(source, name=getattr(source, "__qualname__", type(source).__name__), **options)
    raise TypeError(f"web_search must be a crag WebSearch provider, a LlamaIndex retriever or a search function, "
                    f"got {type(source).__name__}")
