"""Web search for the Incorrect and Ambiguous actions: the protocol, providers and page handling.

The network-facing providers (`SerpAPISearch`, `SerperSearch`, `SearXNGSearch`, `BraveSearch`, `TavilySearch`,
`ExaSearch`, `DDGSSearch`, `FunctionSearch`, `PageFetcher`) import httpx and friends on first access, so
importing the core stays fast.
"""

from importlib import import_module
from typing import Any

from .base import WebSearch, WebSearchError, split_paragraphs, titled_paragraphs
from .memory import InMemorySearch, WebPage
from .replay import ReplaySearch

_LAZY = {"SerpAPISearch": ".serpapi", "SerperSearch": ".serper", "PageFetcher": ".fetch", "FetchedPage": ".fetch",
         "FetchingSearch": ".search_engine", "prefer_wikipedia": ".search_engine", "SearXNGSearch": ".searxng",
         "BraveSearch": ".brave", "TavilySearch": ".tavily", "ExaSearch": ".exa", "DDGSSearch": ".ddgs",
         "FunctionSearch": ".function"}

__all__ = ["BraveSearch", "DDGSSearch", "ExaSearch", "FetchedPage", "FetchingSearch", "FunctionSearch",
           "InMemorySearch", "PageFetcher", "ReplaySearch", "SearXNGSearch", "SerpAPISearch", "SerperSearch",
           "TavilySearch", "WebPage", "WebSearch", "WebSearchError", "prefer_wikipedia", "split_paragraphs",
           "titled_paragraphs"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
