"""A self-hosted SearXNG metasearch instance as CRAG's web search: nothing but the metasearch leaves
your network."""

from __future__ import annotations

import os
from typing import Any

from .base import WebSearchError
from .http_search import HttpxSearch
from .keys import ApiKey

ADVICE = {
    403: "JSON output is disabled on this instance: add `json` to `search.formats` in its settings.yml",
    429: "the instance's limiter refused the request: turn `server.limiter` off in settings.yml, or list "
         "this client's address under `botdetection.ip_lists.pass_ip` in limiter.toml",
    404: "no /search endpoint there: check base_url (the instance's root URL)",
}


class SearXNGSearch(HttpxSearch):
    """Web search through a SearXNG instance (`base_url`, required) with `format=json`.

    - `categories`, `language`, `time_range` ("day", "month", "year"), `engines` and `safesearch` pass
      through; `params` adds any other SearXNG parameter.
    - The instance itself is reached directly, whatever its address (a private one is the usual case):
      only its own host is exempt from the SSRF guard. The result pages it links to are fetched through
      the guarded `fetcher` like any other provider's.
    - An instance behind an authenticating proxy: `api_key` (or `SEARXNG_API_KEY`, optional) goes in the
      `header` you name (default `Authorization: Bearer ...`), never logged or serialized.
    - 403 (JSON not enabled) and 429 (the limiter) say what to change in the instance's settings; results
      empty because every engine failed are a `WebSearchError` naming the engines and their reasons.
    Other options (mode, fetching, timeout, concurrency): see `FetchingSearch`.
    """

    engine_name = "SearXNG"

    def __init__(self, base_url: str, *, categories: str | list[str] | None = None, language: str | None = None,
                 time_range: str | None = None, engines: str | list[str] | None = None, safesearch: int | None = None,
                 params: dict[str, Any] | None = None, api_key: str | None = None, header: str = "Authorization",
                 **options: Any) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"SearXNGSearch needs the instance's http(s) base_url, got {base_url!r}")
        if time_range not in (None, "day", "week", "month", "year"):
            raise ValueError(f"time_range must be day, week, month or year, got {time_range!r}")
        key = ApiKey(api_key, "SEARXNG_API_KEY", "SearXNGSearch") if api_key or os.environ.get(
            "SEARXNG_API_KEY") else None
        super().__init__(api_key=key, **options)
        self.base_url = base_url.rstrip("/")
        self.header = header
        joined = {name: ",".join(value) if isinstance(value, list) else value
                  for name, value in (("categories", categories), ("engines", engines))}
        self.params = {k: v for k, v in {**joined, "language": language, "time_range": time_range,
                                         "safesearch": safesearch}.items() if v is not None} | (params or {})

    def __repr__(self) -> str:
        return f"SearXNGSearch({self.base_url!r}, params={self.params!r})"

    async def aorganic_results(self, query: str) -> list[dict[str, Any]]:
        """The instance's results as (title, link, snippet), or WebSearchError saying what to change."""
        headers = {"Accept": "application/json"}
        if self._api_key is not None:
            value = self._api_key.reveal()
            headers[self.header] = f"Bearer {value}" if self.header.lower() == "authorization" else value
        answer = await self.answer("GET", f"{self.base_url}/search", headers=headers,
                                   params={"q": self.engine_query(query), "format": "json", **self.params})
        if answer.status >= 400:
            raise self.http_error(answer, ADVICE)
        data = answer.json_object(self.engine_name)
        results = data.get("results")
        if not isinstance(results, list):
            raise WebSearchError(f"SearXNG answered without a results list ({type(results).__name__})")
        if not results and data.get("unresponsive_engines"):
            failed = "; ".join(" ".join(map(str, e)) if isinstance(e, list) else str(e)
                               for e in data["unresponsive_engines"][:10])
            raise WebSearchError(self.scrub(f"SearXNG: every engine failed ({failed})"[:300]))
        return [{"title": r.get("title"), "link": r.get("url"), "snippet": r.get("content")}
                for r in results if isinstance(r, dict)]
