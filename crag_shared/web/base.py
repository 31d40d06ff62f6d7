"""The web-search protocol the corrector talks to, and helpers every provider shares."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from ..types import Passage, WebSearchResponse


class WebSearchError(RuntimeError):
    """A search that failed as a whole (bad key, rate limit, provider down); the corrector falls back."""


@runtime_checkable
class WebSearch(Protocol):
    """Search the web for `query` and return at most `top_k` results, with page paragraphs when fetched."""

    def search(self, query: str, top_k: int = 5) -> WebSearchResponse:
        """Search `query`; up to `top_k` results with page paragraphs. Raise `WebSearchError` on failure."""
        ...

    async def asearch(self, query: str, top_k: int = 5) -> WebSearchResponse:
        """Async `search`."""
        ...


def check_search(query: object, top_k: object) -> None:
    """What every provider requires of a search call; a wrong type is the caller's error, said clearly."""
    if not isinstance(query, str):
        raise TypeError(f"search query must be a string, got {type(query).__name__}")
    if not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1:
        raise ValueError(f"top_k must be a positive integer, got {top_k!r}")


def titled_paragraphs(title: str, paragraphs: Iterable[str], min_chars: int = 10) -> tuple[str, ...]:
    """Paragraphs prefixed with the page title, as the paper's web knowledge (`"<title>: <paragraph>"`).

    Paragraphs shorter than `min_chars` (the official code's 10) are dropped.
    """
    title = " ".join((title or "").split())
    kept = []
    for paragraph in paragraphs:
        paragraph = " ".join(paragraph.split())
        if len(paragraph) >= min_chars:
            kept.append(f"{title}: {paragraph}" if title else paragraph)
    return tuple(kept)


def split_paragraphs(text: str) -> list[str]:
    """Paragraphs of a plain text: blank-line separated blocks."""
    return [block.strip() for block in text.replace("\r\n", "\n").split("\n\n") if block.strip()]


def response_passages(response: WebSearchResponse) -> tuple[list[Passage], bool]:
    """A search answer as passages: every page paragraph; if no page yielded text, the snippets instead.

    Returns (passages, used_snippets). Paragraph ids are "web:<rank>:<paragraph>", snippet ids
    "web:<rank>:snippet"; title and URL travel with each passage.
    """
    passages = [Passage(text, id=f"web:{r.position}:{j}", title=r.title, url=r.url)
                for r in response.results for j, text in enumerate(r.paragraphs)]
    if passages or not response.results:
        return passages, False
    snippets = [Passage(r.snippet, id=f"web:{r.position}:snippet", title=r.title, url=r.url)
                for r in response.results if r.snippet and r.snippet.strip()]
    return snippets, bool(snippets)
