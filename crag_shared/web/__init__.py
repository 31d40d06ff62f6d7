"""Web search for the Incorrect and Ambiguous actions: the protocol, providers and page handling.

The network-facing providers (`SerpAPISearch`, `SerperSearch`, `PageFetcher`) import httpx and friends
on first access, so importing the core stays fast.
"""

from importlib import import_module
from typing import Any

from .base import WebSearch, WebSearchError, split_paragraphs, titled_paragraphs
from .memory import InMemorySearch, WebPage
from .replay import ReplaySearch

_LAZY = {"SerpAPISearch": ".serpapi", "SerperSearch": ".serper", "PageFetcher": ".fetch", "FetchedPage": ".fetch",
         "FetchingSearch": ".search_engine", "prefer_wikipedia": ".search_engine"}

__all__ = ["FetchedPage", "FetchingSearch", "InMemorySearch", "PageFetcher", "ReplaySearch",
           "SerpAPISearch", "SerperSearch", "WebPage", "WebSearch", "WebSearchError", "prefer_wikipedia",
           "split_paragraphs", "titled_paragraphs"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
