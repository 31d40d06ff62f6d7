"""DDGS (`pip install ddgs`): metasearch of public engines from this machine, no key and no server."""

from __future__ import annotations

import math
from typing import Any

from .base import WebSearchError
from .search_engine import FetchingSearch

NO_RESULTS = "No results found"


class DDGSSearch(FetchingSearch):
    """Web search through the `ddgs` library: it queries public engines (DuckDuckGo, Bing, Brave, Google,
    Wikipedia, ... chosen by `backend`, default "auto") from this machine, so there is no key, and also no
    service agreement: engines rate-limit scraping, and a limited engine looks like one without results.
    `region`, `safesearch`, `timelimit` and `max_results` pass through; `proxy` (or `DDGS_PROXY`) and
    `verify` go to its HTTP client. No results is an empty answer; a timeout or an error of the library
    is a `WebSearchError`. The call runs on this provider's worker threads and returns by `timeout`
    (ddgs is given the same timeout per request). Other options (mode, fetching, concurrency): see
    `FetchingSearch`.
    """

    engine_name = "DDGS"

    def __init__(self, *, backend: str = "auto", region: str = "us-en", safesearch: str = "moderate",
                 timelimit: str | None = None, max_results: int = 10, proxy: str | None = None,
                 verify: bool | str = True, **options: Any) -> None:
        from .extras import require

        require("ddgs", "DDGSSearch", "ddgs")
        super().__init__(**options)
        self.backend, self.region, self.safesearch, self.timelimit = backend, region, safesearch, timelimit
        self.max_results = max_results
        self.proxy = proxy
        self.verify = verify

    def __repr__(self) -> str:
        return f"DDGSSearch(backend={self.backend!r}, region={self.region!r})"

    def organic_results(self, query: str) -> list[dict[str, Any]]:
        """The engines' results as (title, link, snippet); none found is an empty list."""
        from ddgs import DDGS
        from ddgs.exceptions import DDGSException, TimeoutException

        client = DDGS(proxy=self.proxy, timeout=max(1, math.ceil(self.timeout)), verify=self.verify)
        failure = None
        try:
            found = client.text(self.engine_query(query), region=self.region, safesearch=self.safesearch,
                                timelimit=self.timelimit, max_results=self.max_results, backend=self.backend)
        except TimeoutException as error:
            failure = WebSearchError(self._scrub(f"DDGS timed out: {error}"))
        except DDGSException as error:
            if NO_RESULTS in str(error):
                return []
            failure = WebSearchError(self._scrub(f"DDGS failed (the engines may be limiting this machine; a proxy "
                                                 f"or another provider helps): {error}")[:400])
        if failure is not None:  # raised here, outside the handler: the proxy URL may be in the client's error
            raise failure
        return [{"title": r.get("title"), "link": r.get("href"), "snippet": r.get("body")}
                for r in found if isinstance(r, dict)]

    def _scrub(self, text: str) -> str:
        """`text` without the proxy URL, which may hold credentials."""
        return text.replace(self.proxy, "<proxy>") if self.proxy else text
