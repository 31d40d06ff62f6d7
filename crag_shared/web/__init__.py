"""Web search for the Incorrect and Ambiguous actions: the protocol, providers and page handling."""

from .base import WebSearch, WebSearchError, split_paragraphs, titled_paragraphs
from .memory import InMemoryWebSearch, WebPage
from .replay import ReplayWebSearch

__all__ = [
           "InMemoryWebSearch",
    "ReplayWebSearch",
           "WebPage",
           "WebSearch",
           "WebSearchError",
           "split_paragraphs",
           "titled_paragraphs",
]
