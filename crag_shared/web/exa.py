"""Exa's search API through its official client (`pip install exa-py`), async on httpx."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import httpx

from .base import WebSearchError
from .http_search import HttpxSearch
from .keys import ApiKey

_STATUS = re.compile(r"status code (\d{3})")
ADVICE = {401: "the API key was refused: check EXA_API_KEY", 402: "the account is out of credits",
          403: "this key may not use this endpoint", 429: "rate limit reached; retry later",
          400: "Exa refused the request's parameters"}


class ExaSearch(HttpxSearch):
    """Web search over Exa: key from `api_key` or `EXA_API_KEY` (required at construction).

    Exa returns each page's text with its results (`text=True`, the default): with
    `use_provider_content=True` (default) that text is refined as it is and the page is not fetched.
    `num_results`, `type` ("auto", "neural", "keyword", "fast"), `category`, `include_domains`,
    `exclude_domains` and `params` pass through; `base_url` points the client elsewhere; `transport` is
    the httpx seam. The official async client runs on one bounded httpx client per event loop. Other
    options (mode, fetching, timeout, concurrency): see `FetchingSearch`.
    """

    engine_name = "Exa"

    def __init__(self, api_key: str | None = None, *, num_results: int = 10, type: str = "auto",
                 category: str | None = None, include_domains: list[str] | None = None,
                 exclude_domains: list[str] | None = None, text: bool = True, params: dict[str, Any] | None = None,
                 base_url: str = "https://api.exa.ai", **options: Any) -> None:
        from .extras import require

        require("exa_py", "ExaSearch", "exa-py")
        super().__init__(api_key=ApiKey(api_key, "EXA_API_KEY", "ExaSearch"), **options)
        self.base_url = base_url.rstrip("/")
        self.params = {k: v for k, v in {
            "num_results": num_results, "type": type, "category": category, "include_domains": include_domains,
            "exclude_domains": exclude_domains, "contents": {"text": True} if text else None}.items()
            if v is not None} | (params or {})

    def __repr__(self) -> str:
        return f"ExaSearch(params={self.params!r}, base_url={self.base_url!r})"

    def _exa(self) -> Any:
        """The official async client, its requests going through this provider's bounded client of the
        running loop (see `HttpxSearch`)."""
        from exa_py import AsyncExa

        provider = self

        class BoundedExa(AsyncExa):
            @property
            def client(self) -> httpx.AsyncClient:
                return provider._client()

        key = self._api_key
        assert key is not None
        return self.shared("exa", lambda: BoundedExa(api_key=key.reveal(), api_base=self.base_url,
                                                     timeout=self.timeout))

    async def aorganic_results(self, query: str) -> list[dict[str, Any]]:
        """Exa's results as (title, link, snippet, content), or WebSearchError."""
        exa = self._exa()
        failure = None
        try:
            answer = await asyncio.wait_for(exa.search(self.engine_query(query), **self.params), self.timeout)
        except WebSearchError:
            raise
        except (asyncio.TimeoutError, httpx.TimeoutException):
            raise WebSearchError(f"Exa timed out: no complete answer within {self.timeout:g} s") from None
        except Exception as error:  # the client's errors carry the status and the body: say what to change
            found = _STATUS.search(str(error))
            hint = ADVICE.get(int(found.group(1)), "") if found else ""
            hint = hint or ("answered with malformed JSON" if "JSON" in str(error) else "")
            message = f"Exa {type(error).__name__}{': ' + hint if hint else ''}: {error}"
            failure = WebSearchError(self.scrub(message)[:400])
        if failure is not None:  # raised here, outside the handler: no chain back to the client's error
            raise failure
        return [{"title": r.title, "link": r.url, "snippet": (r.text or "")[:300], "content": r.text or ""}
                for r in getattr(answer, "results", None) or []]
