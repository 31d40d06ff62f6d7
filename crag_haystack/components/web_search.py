"""Web search components: search → fetched page paragraphs as Documents. Failures are outputs, not raises."""

import re
from typing import Any, Literal

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.utils import Secret, deserialize_secrets_inplace

from crag_shared.adapter import (
    WEB_PROVIDERS,
    PageFetcher,
    ReplaySearch,
    Rewrite,
    SerpAPISearch,
    WebSearch,
    WebSearchResponse,
    read_search,
    web_search_from_spec,
)

from ..convert import passage_document
from ..integration import WEBSEARCH, keep_earlier_type_string
from ..lifecycle import Lifecycle
from ..logs import logger, observed, unusable_query
from ..serialization import current_type

OUTPUTS = {"documents": list[Document], "links": list[str], "issues": list[str], "fallback": list[Document]}


class _WebSearchComponent(Lifecycle):
    """Shared run logic; subclasses build their crag_shared provider in `_build()` (called by `warm_up`).

    The answer is read by the core's `read_search`, exactly as `Corrector.search` reads it.
    Outputs: `documents` (one per page paragraph, or the snippets when no page yielded text, flagged
    `crag_snippet`), `links`, `issues` (each failed page, and why there is no web knowledge: the
    search failed, returned no results or no text) and `fallback`: when the search fails or finds
    nothing, the `fallback_documents` you passed in (e.g. the retrieved documents judged Incorrect),
    flagged with `crag_fallback`, so the pipeline never loses them silently. Every issue is logged on
    Haystack's logger. With `raise_on_failure=True` a failed search raises instead.
    """

    top_k: int
    raise_on_failure: bool
    _provider: WebSearch | None = None

    def _build(self) -> WebSearch:
        raise NotImplementedError

    def warm_up(self) -> None:
        """Build the provider; secrets are resolved here, so a pipeline loads and draws without them."""
        if self._provider is None:
            self._provider = self._build()

    @property
    def provider(self) -> WebSearch:
        """The crag_shared provider (built on first use)."""
        self.warm_up()
        assert self._provider is not None
        return self._provider

    def _outputs(self, query: str, response: WebSearchResponse | None, error: Exception | None,
                 fallback_documents: list[Document] | None, span: Any) -> dict[str, Any]:
        outcome = read_search(query, Rewrite(query, "given"), response, error)  # the core's reading
        span.set_tag("crag.results", len(outcome.results))
        span.set_tag("crag.passages", len(outcome.passages))
        issues = [f"{i.stage} {i.url}: {i.reason}" for i in outcome.issues]
        if outcome.used_snippets:
            issues.append("no page yielded text; used the search snippets")
        if outcome.failure:
            issues.append(outcome.failure)
        for issue in issues:
            logger.warning("{component}: {issue}", component=type(self).__name__, issue=issue)
        extra = {"crag_snippet": True} if outcome.used_snippets else {}
        documents = [passage_document(p, crag_search_query=query, **extra) for p in outcome.passages]
        outputs: dict[str, Any] = {"documents": documents, "links": [r.url for r in outcome.results], "issues": issues}
        if not documents and fallback_documents:
            outputs["fallback"] = [Document(content=d.content, meta={**d.meta, "crag_fallback": outcome.failure},
                                            score=d.score, id=d.id) for d in fallback_documents]
        return outputs

    def _empty(self, fallback_documents: list[Document] | None) -> dict[str, Any]:
        return {"documents": [], "links": [], "issues": ["empty query: nothing searched"],
                "fallback": list(fallback_documents or [])}

    @component.output_types(**OUTPUTS)
    def run(self, query: str, fallback_documents: list[Document] | None = None, *,
            top_k: int | None = None) -> dict[str, Any]:
        """
        :param query: the search query (e.g. a rewriter's keywords).
        :param fallback_documents: documents to pass on, flagged, when the web gives no knowledge.
        :param top_k: this run's number of result pages (default: the component's).
        :returns: `documents` (page paragraphs, else snippets, with `url`/`title` meta), `links`, `issues`
            (every page or search problem, in words) and, when the web gave nothing, `fallback` (the
            `fallback_documents`, flagged).
        """
        if unusable_query(type(self).__name__, query):
            return self._empty(fallback_documents)
        with observed("search", type(self).__name__, query) as span:
            try:
                response = self.provider.search(query, top_k or self.top_k)
            except Exception as error:  # the web must never take the pipeline down, unless asked to
                if self.raise_on_failure:
                    raise
                return self._outputs(query, None, error, fallback_documents, span)
            return self._outputs(query, response, None, fallback_documents, span)

    @component.output_types(**OUTPUTS)
    async def run_async(self, query: str, fallback_documents: list[Document] | None = None, *,
                        top_k: int | None = None) -> dict[str, Any]:
        """Async `run`: pages are fetched concurrently on the event loop.

        :param query: the search query.
        :param fallback_documents: documents to pass on, flagged, when the web gives no knowledge.
        :param top_k: this run's number of result pages.
        :returns: as `run`.
        """
        if unusable_query(type(self).__name__, query):
            return self._empty(fallback_documents)
        with observed("search", type(self).__name__, query) as span:
            try:
                response = await self.provider.asearch(query, top_k or self.top_k)
            except Exception as error:
                if self.raise_on_failure:
                    raise
                return self._outputs(query, None, error, fallback_documents, span)
            return self._outputs(query, response, None, fallback_documents, span)


@component
class SerpAPIWebSearch(_WebSearchComponent):
    """SerpAPI search (official client) with concurrent, guarded page fetching and paragraph extraction.

    The key is a Haystack `Secret` (default: the `SERPAPI_API_KEY` environment variable), resolved in
    `warm_up` (as Haystack 3's own components do), so a saved pipeline loads, draws and validates without
    it; it serializes as the env var's name, never its value.

    Usage:

    ```python
    search = SerpAPIWebSearch(top_k=5)               # key: SERPAPI_API_KEY, resolved in warm_up
    out = search.run(query="Sydney Harbour Bridge, designer")
    out["documents"], out["links"], out["issues"]    # page paragraphs, result URLs, what went wrong
    ```
    """

    __module__ = WEBSEARCH  # its canonical, allowlisted home (see crag_haystack.integration)

    def __init__(self, api_key: Secret = Secret.from_env_var("SERPAPI_API_KEY"), top_k: int = 5,  # noqa: B008
                 engine: str = "google", num_results: int = 10, mode: Literal["wiki", "all"] = "wiki",
                 wiki_prefix: bool = False, hl: str | None = None, gl: str | None = None,
                 location: str | None = None, base_url: str | None = None, timeout: float = 10.0,
                 fetch_pages: bool = True, fetch_timeout: float = 5.0, fetch_deadline: float = 10.0,
                 allow_private_addresses: bool | list[str] = False, raise_on_failure: bool = False) -> None:
        """
        :param api_key: the SerpAPI key, as a Haystack `Secret`.
        :param top_k: result pages fetched per search.
        :param engine: SerpAPI engine ("google", "bing", ...).
        :param num_results: results asked of the engine (the best `top_k` are fetched).
        :param mode: "wiki" puts Wikipedia pages first, as the paper does; "all" keeps engine order.
        :param wiki_prefix: prefix the query with "Wikipedia, " like the official CRAG code.
        :param hl: interface language, passed to SerpAPI.
        :param gl: country, passed to SerpAPI.
        :param location: location, passed to SerpAPI.
        :param base_url: another SerpAPI host (a proxy, a test server).
        :param timeout: seconds for the whole search call.
        :param fetch_pages: fetch and extract the result pages (else snippets only).
        :param fetch_timeout: seconds per page request.
        :param fetch_deadline: seconds for all pages together.
        :param allow_private_addresses: lift the SSRF guard (True, or networks such as ["127.0.0.1/32"]).
        :param raise_on_failure: raise when the search fails, instead of the CRAG fallback (the default,
            as for Haystack's LLMRanker, since a CRAG pipeline has a defined fallback for a failed web).
        """
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
        self.raise_on_failure = raise_on_failure

    def _build(self) -> WebSearch:
        key = self.api_key.resolve_value()
        if not key:
            raise ValueError("SerpAPIWebSearch needs an API key: set SERPAPI_API_KEY or pass api_key=Secret...")
        fetcher = PageFetcher(timeout=self.fetch_timeout, deadline=self.fetch_deadline,
                              allow_private_addresses=self.allow_private_addresses)
        return SerpAPISearch(key, engine=self.engine, num_results=self.num_results, mode=self.mode,
                             wiki_prefix=self.wiki_prefix, hl=self.hl, gl=self.gl, location=self.location,
                             base_url=self.base_url, timeout=self.timeout, fetch_pages=self.fetch_pages,
                             fetcher=fetcher)

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component (Haystack's `to_dict` contract; secrets as env var names only)."""
        return default_to_dict(
            self, api_key=self.api_key.to_dict(), top_k=self.top_k, engine=self.engine, num_results=self.num_results,
            mode=self.mode, wiki_prefix=self.wiki_prefix, hl=self.hl, gl=self.gl, location=self.location,
            base_url=self.base_url, timeout=self.timeout, fetch_pages=self.fetch_pages,
            fetch_timeout=self.fetch_timeout, fetch_deadline=self.fetch_deadline,
            allow_private_addresses=self.allow_private_addresses, raise_on_failure=self.raise_on_failure)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SerpAPIWebSearch":
        """Rebuild the component from `to_dict`'s output."""
        deserialize_secrets_inplace(data["init_parameters"], keys=["api_key"])
        return default_from_dict(cls, current_type(cls, data))


@component
class ReplayWebSearch(_WebSearchComponent):
    """Offline web search from a recorded JSONL file (the core `ReplaySearch` format): for demos, docs and
    tests. Nothing leaves the machine.

    Usage:

    ```python
    from crag_shared.demo import recorded_web_path

    search = ReplayWebSearch(str(recorded_web_path()))
    search.run(query="capital, Mongolia")["documents"]
    ```
    """

    __module__ = WEBSEARCH  # its canonical, allowlisted home (see crag_haystack.integration)

    def __init__(self, path: str, top_k: int = 5, raise_on_failure: bool = False) -> None:
        """
        :param path: the recorded searches (JSONL, see `crag_shared.ReplaySearch`).
        :param top_k: results per search.
        :param raise_on_failure: raise when the search fails, instead of the CRAG fallback.
        """
        self.path = str(path)
        self.top_k = top_k
        self.raise_on_failure = raise_on_failure

    def _build(self) -> WebSearch:
        return ReplaySearch(self.path)

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component (Haystack's `to_dict` contract; secrets as env var names only)."""
        return default_to_dict(self, path=self.path, top_k=self.top_k, raise_on_failure=self.raise_on_failure)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ReplayWebSearch":
        """Rebuild the component from `to_dict`'s output."""
        return default_from_dict(cls, current_type(cls, data))


#: A URL's user:password@ part.
_CREDENTIALS = re.compile(r"://[^/@\s]*:[^/@\s]*@")


@component
class ProviderWebSearch(_WebSearchComponent):
    """Any of crag's web-search providers, named as `crag run --web` names them ("searxng:URL", "brave",
    "tavily", "exa", "ddgs", "serper", "serpapi"), with its key as a Haystack `Secret`, resolved in
    `warm_up` and serialized as the variable's name only.

    Usage:

    ```python
    search = ProviderWebSearch("tavily", api_key=Secret.from_env_var("TAVILY_API_KEY"))
    search = ProviderWebSearch("searxng:http://searx.internal:8888", options={"language": "de"})
    ```
    """

    __module__ = WEBSEARCH  # its canonical, allowlisted home (see crag_haystack.integration)

    def __init__(self, provider: str, api_key: Secret | None = None, top_k: int = 5,
                 options: dict[str, Any] | None = None, fetch_timeout: float = 5.0, fetch_deadline: float = 10.0,
                 allow_private_addresses: bool | list[str] = False, raise_on_failure: bool = False) -> None:
        """
        :param provider: the provider's spec: searxng:URL, serpapi, serper, brave, tavily, exa or ddgs.
        :param api_key: its key as a `Secret` (default: the provider's own environment variable).
        :param top_k: result pages per search.
        :param options: the provider's own settings (e.g. `{"time_range": "year"}` for SearXNG,
            `{"search_depth": "advanced"}` for Tavily, `timeout`, `mode`).
        :param fetch_timeout: seconds per page request.
        :param fetch_deadline: seconds for all pages together.
        :param allow_private_addresses: lift the SSRF guard for pages (True, or networks).
        :param raise_on_failure: raise when the search fails, instead of the CRAG fallback.
        """
        kind = str(provider).split(":", 1)[0]
        if kind not in WEB_PROVIDERS:
            raise ValueError(f"ProviderWebSearch provider must be one of {', '.join(WEB_PROVIDERS)} (searxng "
                             f"with :URL), got {provider!r}")
        for name, value in (("provider", provider), *dict(options or {}).items()):
            if isinstance(value, str) and _CREDENTIALS.search(value):
                raise ValueError(f"ProviderWebSearch {name} holds credentials (user:password@ in a URL), which "
                                 "to_dict would save in clear: give them through the environment instead "
                                 "(DDGS_PROXY for a ddgs proxy; SEARXNG_API_KEY for an instance behind a key)")
        self.provider_spec = provider
        self.api_key = api_key
        self.top_k = top_k
        self.options = dict(options or {})
        self.fetch_timeout = fetch_timeout
        self.fetch_deadline = fetch_deadline
        self.allow_private_addresses = allow_private_addresses
        self.raise_on_failure = raise_on_failure

    def _build(self) -> WebSearch:
        fetcher = PageFetcher(timeout=self.fetch_timeout, deadline=self.fetch_deadline,
                              allow_private_addresses=self.allow_private_addresses)
        key = self.api_key.resolve_value() if self.api_key is not None else None
        search = web_search_from_spec(self.provider_spec, api_key=key, fetcher=fetcher, **self.options)
        assert search is not None
        return search

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component (Haystack's `to_dict` contract; the key as its env var's name only)."""
        return default_to_dict(
            self, provider=self.provider_spec, api_key=self.api_key.to_dict() if self.api_key else None,
            top_k=self.top_k, options=self.options, fetch_timeout=self.fetch_timeout,
            fetch_deadline=self.fetch_deadline, allow_private_addresses=self.allow_private_addresses,
            raise_on_failure=self.raise_on_failure)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ProviderWebSearch":
        """Rebuild the component from `to_dict`'s output."""
        deserialize_secrets_inplace(data["init_parameters"], keys=["api_key"])
        return default_from_dict(cls, current_type(cls, data))


keep_earlier_type_string(SerpAPIWebSearch, "web_search")
keep_earlier_type_string(ReplayWebSearch, "web_search")
