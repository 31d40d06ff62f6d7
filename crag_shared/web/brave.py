"""Brave Search's web API (api.search.brave.com) as CRAG's web search, over httpx."""

from __future__ import annotations

import html
import re
from typing import Any

from .base import WebSearchError
from .http_search import HttpxSearch
from .keys import ApiKey

__all__ = ["ADVICE", "BraveSearch"]

BRAVE_URL = "https://api.search.brave.com/res/v1"
_TAGS = re.compile(r"<[^>]{0,200}>")
ADVICE = {422: "Brave refused the request or the key (SUBSCRIPTION_TOKEN_INVALID is a bad key)"}


class BraveSearch(HttpxSearch):
    """Web search over Brave Search: key from `api_key` or `BRAVE_API_KEY` (required at construction).

    `count` (at most 20), `country`, `search_lang`, `freshness` and `params` pass through; each result's
    description and its `extra_snippets` make its snippet (Brave's highlighting removed). 401/422 (bad
    key), 429 (rate limit, with when to retry from `X-RateLimit-Reset`) and 5xx are `WebSearchError`s that
    say what to change. Other options (mode, fetching, timeout, concurrency): see `FetchingSearch`.
    """

    engine_name = "Brave"

    def __init__(self, api_key: str | None = None, *, count: int = 10, country: str | None = None,
                 search_lang: str | None = None, freshness: str | None = None, params: dict[str, Any] | None = None,
                 base_url: str = BRAVE_URL, **options: Any) -> None:
        if not 1 <= count <= 20:
            raise ValueError(f"Brave returns 1 to 20 results per request, got count={count}")
        super().__init__(api_key=ApiKey(api_key, "BRAVE_API_KEY", "BraveSearch"), **options)
        self.base_url = base_url.rstrip("/")
        self.params = {k: v for k, v in {"count": count, "country": country, "search_lang": search_lang,
                                         "freshness": freshness, "extra_snippets": "true"}.items() if v is not None}
        self.params |= params or {}

    def __repr__(self) -> str:
        return f"BraveSearch(mode={self.mode!r}, base_url={self.base_url!r})"

    async def aorganic_results(self, query: str) -> list[dict[str, Any]]:
        """Brave's web results as (title, link, snippet), or WebSearchError."""
        assert self._api_key is not None
        answer = await self.answer("GET", f"{self.base_url}/web/search", params={"q": self.engine_query(query),
                                                                                  **self.params},
                                   headers={"X-Subscription-Token": self._api_key.reveal(),
                                            "Accept": "application/json"})
        if answer.status >= 400:
            raise self.http_error(answer, ADVICE)
        data = answer.json_object(self.engine_name)
        web = data.get("web") or {}
        results = web.get("results") if isinstance(web, dict) else None
        if results is None and data.get("type") == "ErrorResponse":
            raise WebSearchError(self.scrub(f"Brave error: {data.get('error')}")[:300])
        if not isinstance(results or [], list):
            raise WebSearchError(f"Brave answered with malformed web results ({type(results).__name__})")
        return [{"title": _plain(r.get("title")), "link": r.get("url"), "snippet": _snippet(r)}
                for r in results or [] if isinstance(r, dict)]


def _snippet(result: dict[str, Any]) -> str:
    extras = result.get("extra_snippets")
    return " ".join(_plain(s) for s in [result.get("description"), *(extras if isinstance(extras, list) else [])])


def _plain(value: object) -> str:
    """Brave's text with its <strong> highlighting and HTML entities undone."""
    return html.unescape(_TAGS.sub("", value)) if isinstance(value, str) else ""
