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


#: The most a search API's answer may hold once decoded: far above any real answer (tens of KB).
MAX_ANSWER_BYTES = 10_000_000

#: Bounds on what one page can turn into, whatever it holds: a title (the page's or the search result's),
#: each paragraph, how many paragraphs, and all their characters together. Each paragraph carries the
#: title, so an unbounded title would be copied once per paragraph.
MAX_TITLE_CHARS = 300
MAX_PARAGRAPH_CHARS = 4_000
MAX_PAGE_PARAGRAPHS = 200
MAX_PAGE_CHARS = 400_000


def one_line(text: str, limit: int) -> str:
    """`text` with its whitespace collapsed to single spaces, at most `limit` characters (looking at no
    more of it than that needs)."""
    return " ".join(text[: limit * 4].split())[:limit]


def titled_paragraphs(title: str, paragraphs: Iterable[str], min_chars: int = 10,
                      max_paragraphs: int = MAX_PAGE_PARAGRAPHS) -> tuple[str, ...]:
    """Paragraphs prefixed with the page title, as the paper's web knowledge (`"<title>: <paragraph>"`).

    Paragraphs shorter than `min_chars` (the official code's 10) are dropped. The title is cut to
    `MAX_TITLE_CHARS` before it is copied, each paragraph to `MAX_PARAGRAPH_CHARS`, and reading stops after
    `max_paragraphs` paragraphs or `MAX_PAGE_CHARS` characters in all.
    """
    title = one_line(title or "", MAX_TITLE_CHARS)
    kept: list[str] = []
    total = 0
    for paragraph in paragraphs:
        paragraph = one_line(paragraph, MAX_PARAGRAPH_CHARS)
        if len(paragraph) < min_chars:
            continue
        kept.append(f"{title}: {paragraph}" if title else paragraph)
        total += len(kept[-1])
        if len(kept) >= max_paragraphs or total >= MAX_PAGE_CHARS:
            break
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
