"""The search APIs `FakeWeb` speaks, each in its provider's documented answer shape, with its failures."""

from __future__ import annotations

import json
from typing import Any

#: (HTTP method, path) of each emulated search API
ROUTES = {("GET", "/search"): "serpapi", ("POST", "/serper/search"): "serper", ("GET", "/searxng/search"): "searxng",
          ("GET", "/brave/web/search"): "brave", ("POST", "/tavily/search"): "tavily", ("POST", "/exa/search"): "exa"}

#: faults a test can switch the search APIs to (besides FakeWeb's timing faults)
ANSWER_FAULTS = ("401", "403", "429", "500", "malformed", "error200", "empty", "list", "bad_entries", "engines_failed")

Answer = tuple[int, bytes, dict[str, str]]
JSON = {"Content-Type": "application/json"}


def request_key(engine: str, query: dict[str, list[str]], headers: Any) -> str | None:
    """The API key a request carries where its provider puts it (None: SearXNG needs none)."""
    if engine == "serpapi":
        return (query.get("api_key") or [""])[0]
    if engine == "tavily":
        return str(headers.get("Authorization", "")).removeprefix("Bearer ")
    header = {"serper": "X-API-KEY", "brave": "X-Subscription-Token", "exa": "x-api-key"}.get(engine)
    return None if header is None else str(headers.get(header, ""))


def failure(engine: str, fault: str | None) -> Answer | None:
    """The provider's answer for a failing request, or None when `fault` is not one it answers."""
    if fault == "401":
        status, body = {"brave": (422, {"type": "ErrorResponse", "error": {
            "status": 422, "code": "SUBSCRIPTION_TOKEN_INVALID", "detail": "The subscription token is invalid."}}),
            "tavily": (401, {"detail": {"error": "Unauthorized: missing or invalid API key."}}),
            "exa": (401, {"requestId": "r-1", "error": "Invalid API key", "tag": "INVALID_API_KEY"}),
        }.get(engine, (401, {"error": "Invalid API key."}))
        return status, json.dumps(body).encode(), JSON
    if fault == "403":
        if engine == "searxng":  # what an instance without `json` in search.formats answers
            return 403, b"<html><body><h1>403 Forbidden</h1></body></html>", {"Content-Type": "text/html"}
        return 403, b'{"error": "This key may not use this endpoint."}', JSON
    if fault == "429":
        headers = {"searxng": {"Content-Type": "text/plain"},
                   "brave": {**JSON, "X-RateLimit-Limit": "1, 15000", "X-RateLimit-Reset": "7, 1419704"},
                   }.get(engine, {**JSON, "Retry-After": "30"})
        body = b"Too Many Requests" if engine == "searxng" else b'{"error": "Your account has run out of searches."}'
        return 429, body, headers
    fixed = {"500": (500, b'{"error": "Internal error"}'), "malformed": (200, b'{"results": ['),
             "list": (200, b'[{"link": "http://example.org/"}]'),
             "error200": (200, b'{"error": "Unsupported `gl` parameter."}')}
    if fault in fixed:
        return fixed[fault][0], fixed[fault][1], JSON
    if fault == "empty" and engine == "serpapi":
        body = {"search_metadata": {"status": "Success"}, "error": "Google hasn't returned any results for this query."}
        return 200, json.dumps(body).encode(), JSON
    if fault == "engines_failed" and engine == "searxng":
        body = {"query": "q", "number_of_results": 0, "results": [], "answers": [], "suggestions": [],
                "unresponsive_engines": [["google", "timeout"], ["bing", "CAPTCHA"]]}
        return 200, json.dumps(body).encode(), JSON
    return None


def results(engine: str, query: str, hits: list[dict[str, Any]], request: dict[str, Any]) -> dict[str, Any]:
    """The provider's answer listing `hits` (title, link, snippet, text: the page's whole text)."""
    if engine == "serper":
        return {"searchParameters": {"q": query}, "organic": _organic(hits)}
    if engine == "searxng":
        return {"query": query, "number_of_results": len(hits), "answers": [], "corrections": [], "infoboxes": [],
                "suggestions": [], "unresponsive_engines": [],
                "results": [{"url": h["link"], "title": h["title"], "content": h["snippet"], "engine": "wikipedia",
                             "engines": ["wikipedia"], "positions": [i], "score": 1.0 / i, "category": "general"}
                            for i, h in enumerate(hits, 1)]}
    if engine == "brave":
        return {"type": "search", "query": {"original": query},
                "web": {"type": "search", "results": [
                    {"title": h["title"], "url": h["link"], "description": f"<strong>{h['snippet'][:60]}</strong>"
                     f"{h['snippet'][60:]}", "extra_snippets": [h["text"][:120]], "age": "2 days ago"}
                    for h in hits]}}
    if engine == "tavily":
        raw = request.get("include_raw_content")
        return {"query": query, "answer": None, "images": [], "response_time": 0.42,
                "results": [{"title": h["title"], "url": h["link"], "content": h["snippet"], "score": 0.9,
                             "raw_content": h["text"] if raw else None} for h in hits]}
    if engine == "exa":
        text = bool((request.get("contents") or {}).get("text"))
        return {"requestId": "r-1", "searchType": "neural", "costDollars": {"total": 0.005},
                "results": [{"id": h["link"], "url": h["link"], "title": h["title"], "score": 0.5,
                             "publishedDate": "2024-01-01T00:00:00.000Z", "author": None,
                             **({"text": h["text"]} if text else {})} for h in hits]}
    return {"search_metadata": {"status": "Success"}, "search_parameters": {"q": query},
            "organic_results": _organic(hits)}


def _organic(hits: list[dict[str, Any]]) -> list[Any]:
    return [{"position": i, "title": h["title"], "link": h["link"], "snippet": h["snippet"]}
            for i, h in enumerate(hits, 1)]


BAD_ENTRIES = [{"title": "a list", "link": ["http://x/"]}, {"link": 7}, {"link": {"u": 1}}, "not a dict",
               {"title": "no link"}, {"link": "javascript:alert(1)"}]
