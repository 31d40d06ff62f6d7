"""Tavily's search API through its official client (`pip install tavily-python`)."""

from __future__ import annotations

from typing import Any, Literal

from .base import WebSearchError
from .deadline import RequestsSearch, call_by, deadline_session
from .keys import ApiKey

ADVICE = {"InvalidAPIKeyError": "the API key was refused: check TAVILY_API_KEY",
          "UsageLimitExceededError": "rate limit or plan quota reached (HTTP 429/432/433); retry later or upgrade",
          "ForbiddenError": "this key's plan may not make this request",
          "BadRequestError": "Tavily refused the request's parameters"}


class TavilySearch(RequestsSearch):
    """Web search over Tavily: key from `api_key` or `TAVILY_API_KEY` (required at construction).

    Tavily returns each page's text with its results (`include_raw_content="text"`, the default): with
    `use_provider_content=True` (default) that text is refined as it is and the page is not fetched;
    `include_raw_content=False` keeps only Tavily's snippets and fetches the pages. `search_depth`,
    `topic`, `max_results`, `time_range`, `include_domains`, `exclude_domains` and `params` pass through;
    `base_url` points the client elsewhere. One client serves every call, each ended by `timeout` however
    the API trickles. Other options (mode, fetching, concurrency): see `FetchingSearch`.
    """

    engine_name = "Tavily"

    def __init__(self, api_key: str | None = None, *, search_depth: Literal["basic", "advanced"] = "basic",
                 topic: str = "general", max_results: int = 10,
                 include_raw_content: Literal["text", "markdown", False] = "text", time_range: str | None = None,
                 include_domains: list[str] | None = None, exclude_domains: list[str] | None = None,
                 params: dict[str, Any] | None = None, base_url: str | None = None, **options: Any) -> None:
        from .extras import require

        require("tavily", "TavilySearch", "tavily-python")
        super().__init__(**options)
        self._api_key = ApiKey(api_key, "TAVILY_API_KEY", "TavilySearch")
        self.base_url = base_url
        self.params = {k: v for k, v in {
            "search_depth": search_depth, "topic": topic, "max_results": max_results, "time_range": time_range,
            "include_raw_content": include_raw_content or None, "include_domains": include_domains,
            "exclude_domains": exclude_domains}.items() if v is not None} | (params or {})

    def __repr__(self) -> str:
        return f"TavilySearch(params={self.params!r}, base_url={self.base_url!r})"

    def results_by(self, query: str, ends_at: float) -> list[dict[str, Any]]:
        """Tavily's results as (title, link, snippet, content), or WebSearchError."""
        client = self.shared("client", self._client)
        failure = None
        try:
            data = call_by(ends_at, self.timeout, self.engine_name, lambda: client.search(
                self.engine_query(query), timeout=self.timeout, **self.params))
        except WebSearchError:
            raise
        except Exception as error:  # the client's own errors: say what to change, never the key
            hint = ADVICE.get(type(error).__name__, "")
            message = f"Tavily {type(error).__name__}{': ' + hint if hint else ''}: {error}"
            failure = WebSearchError(self._api_key.scrub(message)[:400])
        if failure is not None:  # raised here, outside the handler: no chain back to the client's error
            raise failure
        results = data.get("results") if isinstance(data, dict) else None
        if not isinstance(results, list):
            raise WebSearchError(f"Tavily answered without a results list ({type(results).__name__})")
        return [{"title": r.get("title"), "link": r.get("url"), "snippet": r.get("content"),
                 "content": r.get("raw_content") or ""} for r in results if isinstance(r, dict)]

    def _client(self) -> Any:
        from tavily import TavilyClient

        session = deadline_session(self.max_concurrent_searches)
        return TavilyClient(api_key=self._api_key.reveal(), api_base_url=self.base_url, session=session)
