"""Web search specs ("none", "replay:PATH", "serpapi", "serper", "searxng:URL", "brave", "tavily", "exa",
"ddgs"): read and written by one table, as evaluator specs are. `crag run --web` and the Ray actors build
their provider here; keys come from the environment where the provider is built."""

from __future__ import annotations

from typing import Any

from ..specs import Kind, SpecTable
from .base import WebSearch
from .replay import ReplaySearch


def _replay(target: str) -> ReplaySearch:
    return ReplaySearch(target)


def _serpapi(target: str) -> WebSearch:
    from .serpapi import SerpAPISearch

    return SerpAPISearch()


def _serper(target: str) -> WebSearch:
    from .serper import SerperSearch

    return SerperSearch()


def _searxng(target: str) -> WebSearch:
    from .searxng import SearXNGSearch

    return SearXNGSearch(target)


def _brave(target: str) -> WebSearch:
    from .brave import BraveSearch

    return BraveSearch()


def _tavily(target: str) -> WebSearch:
    from .tavily import TavilySearch

    return TavilySearch()


def _exa(target: str) -> WebSearch:
    from .exa import ExaSearch

    return ExaSearch()


def _ddgs(target: str) -> WebSearch:
    from .ddgs import DDGSSearch

    return DDGSSearch()


def _none(target: str) -> None:
    return None


WEB_SPECS: SpecTable[Any] = SpecTable("web search", [
    Kind("none", "none", _none),
    Kind("replay", "required", _replay, ReplaySearch, lambda search: str(search.path)),
    Kind("serpapi", "none", _serpapi),  # read only: a provider's own settings are more than its spec says
    Kind("serper", "none", _serper),
    Kind("searxng", "required", _searxng, placeholder="URL"),
    Kind("brave", "none", _brave),
    Kind("tavily", "none", _tavily),
    Kind("exa", "none", _exa),
    Kind("ddgs", "none", _ddgs),
])


def web_search_from_spec(spec: str) -> WebSearch | None:
    """The provider a spec names (None for "none"); a key missing from the environment (ValueError) or a
    provider's client that is not installed (ImportError) fails here."""
    return WEB_SPECS.build(spec)
