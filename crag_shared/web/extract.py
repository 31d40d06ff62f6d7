"""Page text → titled paragraphs, with trafilatura (main-content extraction, boilerplate removed)."""

from __future__ import annotations

import logging
import threading
from functools import lru_cache
from typing import Any

from .base import titled_paragraphs


class _QuietInOurExtraction(logging.Filter):
    """trafilatura warns about every page it cannot parse; crag reports those pages in the trace instead.
    Only records from crag's extraction threads are dropped, so trafilatura's logging elsewhere is untouched."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.ERROR or not threading.current_thread().name.startswith(EXTRACT_THREAD)


EXTRACT_THREAD = "crag-extract"

#: trafilatura's time and memory grow with a page's elements (about 80 µs and 1.4 KB each: a 3 MB page of
#: empty paragraphs took 28 s and 530 MB); past this many tags the rest of a page is not read. Real pages
#: put their main text before the navigation and references that make up most of their tags.
MAX_PAGE_TAGS = 40_000


def first_tags(html: str, limit: int = MAX_PAGE_TAGS) -> str:
    """`html` up to (not including) its `limit`+1-th tag: what one page can cost the extractor is bounded."""
    position = 0
    for _ in range(limit):
        position = html.find("<", position) + 1
        if not position:
            return html
    end = html.find("<", position)
    return html if end < 0 else html[:end]


@lru_cache(maxsize=1)
def _quiet_trafilatura() -> None:
    """Filters apply per logger, not to children: every trafilatura module's logger gets ours."""
    quiet = _QuietInOurExtraction()
    for name in list(logging.root.manager.loggerDict):
        if name == "trafilatura" or name.startswith("trafilatura."):
            logging.getLogger(name).addFilter(quiet)


def extract_page(html: str, *, url: str | None = None, fallback_title: str = "", min_chars: int = 20,
                 fast: bool = True) -> tuple[str, tuple[str, ...]]:
    """Return (title, paragraphs): each paragraph prefixed with the page title, as in the paper.

    The title is the page's main heading when trafilatura finds one, else `fallback_title` (the search
    result's title). Paragraphs shorter than `min_chars` characters are dropped.
    """
    import trafilatura

    _quiet_trafilatura()

    document: Any = trafilatura.bare_extraction(first_tags(html), url=url, with_metadata=True, include_comments=False,
                                           include_tables=False, fast=fast)
    if document is None or not document.text:
        return fallback_title, ()
    title = (document.title or fallback_title or "").strip()
    return title, titled_paragraphs(title, document.text.splitlines(), min_chars=min_chars)


def text_paragraphs(text: str, *, title: str, min_chars: int = 20) -> tuple[str, tuple[str, ...]]:
    """Plain-text pages: one paragraph per blank-line-separated block (or per line if there are none)."""
    blocks = [b for b in text.replace("\r\n", "\n").split("\n\n") if b.strip()]
    if len(blocks) <= 1:
        blocks = text.splitlines()
    return title, titled_paragraphs(title, blocks, min_chars=min_chars)
