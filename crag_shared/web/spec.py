"""Web search specs ("none", "replay:PATH", "serpapi", "serper", "searxng:URL", "brave", "tavily", "exa",
"ddgs"): read and written by one table, as evaluator specs are. `crag run --web`, the Ray actors and the
Haystack `ProviderWebSearch` component build their provider here; a key comes from the argument, else
from the environment where the provider is built."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from ..specs import Kind, SpecTable
from .base import WebSearch
from .replay import ReplaySearch

#: each networked provider: (module, class, whether it takes a key)
PROVIDERS = {"serpapi": (".serpapi", "SerpAPISearch", True), "serper": (".serper", "SerperSearch", True),
             "searxng": (".searxng", "SearXNGSearch", True), "brave": (".brave", "BraveSearch", True),
             "tavily": (".tavily", "TavilySearch", True), "exa": (".exa", "ExaSearch", True),
             "ddgs": (".ddgs", "DDGSSearch", False)}


def _provider(kind: str) -> Any:
    """The builder of a networked provider; its module is imported when it builds (httpx, clients)."""
    def build(target: str, *, api_key: str | None = None, **options: Any) -> WebSearch:
        module, name, keyed = PROVIDERS[kind]
        if api_key is not None and not keyed:
            raise ValueError(f"{kind} takes no API key")
        cls = getattr(import_module(module, __package__), name)
        args = (target,) if target else ()
        return cls(*args, **({"api_key": api_key} if api_key is not None else {}), **options)

    return build


def _replay(target: str) -> ReplaySearch:
    return ReplaySearch(target)


def _none(target: str) -> None:
    return None


WEB_SPECS: SpecTable[Any] = SpecTable("web search", [
    Kind("none", "none", _none),
    Kind("replay", "required", _replay, ReplaySearch, lambda search: str(search.path)),
    # read only: a provider's own settings are more than its spec says
    Kind("serpapi", "none", _provider("serpapi")),
    Kind("serper", "none", _provider("serper")),
    Kind("searxng", "required", _provider("searxng"), placeholder="URL"),
    Kind("brave", "none", _provider("brave")),
    Kind("tavily", "none", _provider("tavily")),
    Kind("exa", "none", _provider("exa")),
    Kind("ddgs", "none", _provider("ddgs")),
])


def web_search_from_spec(spec: str, *, api_key: str | None = None, **options: Any) -> WebSearch | None:
    """The provider a spec names (None for "none"), with `api_key` and the provider's own `options`; a key
    missing from the environment (ValueError) or a provider's client that is not installed (ImportError)
    fails here."""
    kind, _ = WEB_SPECS.parse(spec)
    if kind.name in ("none", "replay") and (api_key is not None or options):
        raise ValueError(f"web search {kind.name!r} takes no key or options")
    return WEB_SPECS.build(spec, **({"api_key": api_key, **options} if kind.name in PROVIDERS else {}))
