"""Web search components: search → fetched page paragraphs as Documents. Failures are outputs, not raises."""

from __future__ import annotations

from typing import Any, Literal

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.utils import Secret, deserialize_secrets_inplace

from crag_shared import ReplayWebSearch
from crag_shared.types import WebSearchResponse
from crag_shared.web import PageFetcher, SerpAPISearch, WebSearch
from crag_shared.web.base import response_passages

from ..convert import passage_document


class _WebSearchComponent:
    """Shared run logic; subclasses set `self._provider` (a crag_shared `WebSearch`) and `self.top_k`.

    Outputs: `documents` (one per page paragraph, or the snippets when no page yielded text, flagged
    `crag_snippet`), `links`, `issues` (each failed page, or why the search failed) and `fallback`:
    when the search fails or finds nothing, the `fallback_documents` you passed in (e.g. the retrieved
    documents judged Incorrect), flagged with `crag_fallback`, so the pipeline never loses them silently.
    """

    _provider: WebSearch
    top_k: int

    @property
    def provider(self) -> WebSearch:
        return self._provider

    def _outputs(self, query: str, response: WebSearchResponse | None, error: Exception | None,
                 fallback_documents: list[Document] | None) -> dict[str, Any]:
        if error is not None:
            reason = f"web search failed: {type(error).__name__}: {error}"
            issues, documents, links = [reason], [], []
        else:
            assert response is not None
            passages, used_snippets = response_passages(response)
            issues = [f"{i.stage} {i.url}: {i.reason}" for i in response.issues]
            extra = {"crag_snippet": True} if used_snippets else {}
            if used_snippets:
                issues.append("no page yielded text; used the search snippets")
            documents = [passage_document(p, crag_search_query=query, **extra) for p in passages]
            links = [r.url for r in response.results]
            reason = "web search returned no results" if not response.results else "web results had no text"
        outputs: dict[str, Any] = {"documents": documents, "links": links, "issues": issues}
        if not documents and fallback_documents:
            outputs["fallback"] = [Document(content=d.content, meta={**d.meta, "crag_fallback": reason},
                                            score=d.score, id=d.id) for d in fallback_documents]
        return outputs

    @component.output_types(documents=list[Document], links=list[str], issues=list[str], fallback=list[Document])
    def run(self, query: str, fallback_documents: list[Document] | None = None) -> dict[str, Any]:
        try:
            return self._outputs(query, self._provider.search(query, self.top_k), None, fallback_documents)
        except Exception as error:  # the web must never take the pipeline down
            return self._outputs(query, None, error, fallback_documents)

    @component.output_types(documents=list[Document], links=list[str], issues=list[str], fallback=list[Document])
    async def run_async(self, query: str, fallback_documents: list[Document] | None = None) -> dict[str, Any]:
        try:
            response = await self._provider.asearch(query, self.top_k)
        except Exception as error:
            return self._outputs(query, None, error, fallback_documents)
        return self._outputs(query, response, None, fallback_documents)


@component
class SerpAPIWebSearch(_WebSearchComponent):
    """SerpAPI search (official client) with concurrent, guarded page fetching and paragraph extraction.

    The key is a Haystack `Secret` (default: the `SERPAPI_API_KEY` environment variable), resolved at
    construction so a missing key fails immediately; it serializes as the env var's name, never its
    value. `mode="wiki"` prefers Wikipedia pages as in the paper. `allow_private_addresses` lifts the
    SSRF guard (for local test servers).
    """

    def __init__(self, api_key: Secret = Secret.from_env_var("SERPAPI_API_KEY"), top_k: int = 5,  # noqa: B008
                 engine: str = "google", num_results: int = 10, mode: Literal["wiki", "all"] = "wiki",
                 wiki_prefix: bool = False, hl: str | None = None, gl: str | None = None,
                 location: str | None = None, base_url: str | None = None, timeout: float = 10.0,
                 fetch_pages: bool = True, fetch_timeout: float = 5.0, fetch_deadline: float = 10.0,
                 allow_private_addresses: bool | list[str] = False) -> None:
        self.api_key = api_key
        self.top_k = top_k
        self.engine = engine
        self.num_results = num_results
        self.mode = mode
        self.wiki_prefix = wiki_prefix
        self.hl, self.gl, self.location = hl, gl, location
        self.base_url = base_url
        self.timeout = timeout
        self.fetch_pages = fetch_pages
        self.fetch_timeout = fetch_timeout
        self.fetch_deadline = fetch_deadline
        self.allow_private_addresses = allow_private_addresses
        fetcher = PageFetcher(timeout=fetch_timeout, deadline=fetch_deadline,
                              allow_private_addresses=allow_private_addresses)
        self._provider = SerpAPISearch(api_key.resolve_value(), engine=engine, num_results=num_results, mode=mode,
                                       wiki_prefix=wiki_prefix, hl=hl, gl=gl, location=location, base_url=base_url,
                                       timeout=timeout, fetch_pages=fetch_pages, fetcher=fetcher)

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self, api_key=self.api_key.to_dict(), top_k=self.top_k, engine=self.engine, num_results=self.num_results,
            mode=self.mode, wiki_prefix=self.wiki_prefix, hl=self.hl, gl=self.gl, location=self.location,
            base_url=self.base_url, timeout=self.timeout, fetch_pages=self.fetch_pages,
            fetch_timeout=self.fetch_timeout, fetch_deadline=self.fetch_deadline,
            allow_private_addresses=self.allow_private_addresses)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SerpAPIWebSearch":
        deserialize_secrets_inplace(data["init_parameters"], keys=["api_key"])
        return default_from_dict(cls, data)


@component
class RecordedWebSearch(_WebSearchComponent):
    """Offline web search from a recorded JSONL file (crag_shared `ReplayWebSearch` format): for demos,
    docs and tests. Nothing leaves the machine."""

    def __init__(self, path: str, top_k: int = 5) -> None:
        self.path = str(path)
        self.top_k = top_k
        self._provider = ReplayWebSearch(self.path)

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, path=self.path, top_k=self.top_k)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RecordedWebSearch":
        return default_from_dict(cls, data)
