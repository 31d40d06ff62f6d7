"""SearXNG, Brave, Tavily and Exa against loopback fakes answering in each provider's documented shape."""

from __future__ import annotations

import asyncio

import pytest

from crag_shared import Corrector
from crag_shared.web import WebSearchError
from crag_shared.web.fetch import PageFetcher

LOOPBACK = ["127.0.0.1/32"]
TEXT = "Henry Feilden was born in 1818 at Blackburn, Lancashire, and sat in Parliament for the borough."
MORE = "He was the son of Joseph Feilden of Witton and was made a baronet after his years in Parliament."
QUERY = "Where was Henry Feilden born?"


def provider(web, name, **kwargs):
    from crag_shared.web.brave import BraveSearch
    from crag_shared.web.exa import ExaSearch
    from crag_shared.web.searxng import SearXNGSearch
    from crag_shared.web.tavily import TavilySearch

    kwargs.setdefault("fetcher", PageFetcher(allow_private_addresses=LOOPBACK, retries=0))
    kwargs.setdefault("timeout", 3.0)
    if name == "searxng":
        return SearXNGSearch(f"{web.url}/searxng", **kwargs)
    if name == "brave":
        return BraveSearch(api_key=web.api_key, base_url=f"{web.url}/brave", **kwargs)
    if name == "tavily":
        return TavilySearch(api_key=web.api_key, base_url=f"{web.url}/tavily", **kwargs)
    return ExaSearch(api_key=web.api_key, base_url=f"{web.url}/exa", **kwargs)


PROVIDERS = ["searxng", "brave", "tavily", "exa"]


@pytest.fixture
def web(crag_fake_web):
    crag_fake_web.add("feilden", "Henry Feilden", [TEXT, MORE])
    crag_fake_web.add("other", "Other page", ["An unrelated page about the coral reefs of Queensland, Australia."])
    return crag_fake_web


@pytest.mark.parametrize("name", PROVIDERS)
def test_each_provider_gives_the_pages_paragraphs_sync_and_async(web, name):
    search = provider(web, name)
    for response in (search.search(QUERY, top_k=2), asyncio.run(search.asearch(QUERY, top_k=2))):
        assert [r.title for r in response.results] == ["Henry Feilden", "Other page"]
        assert response.results[0].url == web.page_url("feilden")
        assert any(TEXT in p for p in response.results[0].paragraphs), response.issues
        assert response.results[0].snippet and "<strong>" not in response.results[0].snippet


@pytest.mark.parametrize("name", ["tavily", "exa"])
def test_page_text_the_provider_returns_is_used_instead_of_fetching(web, name):
    response = provider(web, name, min_content_chars=50).search(QUERY, top_k=2)
    assert not [r for r in web.requests if r.startswith("/page/")]
    assert any(MORE in p for p in response.results[0].paragraphs)
    provider(web, name, use_provider_content=False).search(QUERY, top_k=2)
    assert [r for r in web.requests if r.startswith("/page/")]


@pytest.mark.parametrize("name", PROVIDERS)
@pytest.mark.parametrize("fault,words", [("500", "500"), ("malformed", "malformed|Expecting"),
                                         ("timeout", "timed out"), ("list", "malformed|list|results")])
def test_failures_are_web_search_errors_that_say_what_happened(web, name, fault, words):
    web.search_fault = fault
    with pytest.raises(WebSearchError, match=words):
        provider(web, name, timeout=1.0).search(QUERY)


@pytest.mark.parametrize("name,words", [("brave", "SUBSCRIPTION_TOKEN_INVALID"), ("tavily", "check TAVILY_API_KEY"),
                                        ("exa", "check EXA_API_KEY")])
def test_a_bad_key_says_so_and_never_shows_the_key(web, name, words):
    web.api_key = "the-right-key"
    search = provider(web, name)
    search._api_key._value = "wrong-key-1234567"
    with pytest.raises(WebSearchError, match=words) as caught:
        search.search(QUERY)
    assert "wrong-key-1234567" not in str(caught.value)


@pytest.mark.parametrize("name,words", [("brave", "rate limit.*retry after 7 s"), ("tavily", "rate limit"),
                                        ("exa", "rate limit"), ("searxng", "limiter.*pass_ip")])
def test_rate_limits_say_when_or_what_to_change(web, name, words):
    web.search_fault = "429"
    with pytest.raises(WebSearchError, match=words):
        provider(web, name).search(QUERY)


def test_searxng_without_json_output_says_which_setting_to_change(web):
    web.search_fault = "403"
    with pytest.raises(WebSearchError, match=r"add `json` to `search.formats`"):
        provider(web, "searxng").search(QUERY)


def test_searxng_whose_engines_all_failed_names_them(web):
    web.search_fault = "engines_failed"
    with pytest.raises(WebSearchError, match=r"every engine failed \(google timeout; bing CAPTCHA\)"):
        provider(web, "searxng").search(QUERY)


def test_searxng_reaches_its_private_instance_but_result_pages_stay_guarded(web):
    from crag_shared.web.searxng import SearXNGSearch

    guarded = SearXNGSearch(f"{web.url}/searxng", fetcher=PageFetcher(retries=0))  # no private addresses allowed
    response = guarded.search(QUERY, top_k=2)
    assert [r.title for r in response.results] == ["Henry Feilden", "Other page"]  # the instance answered
    assert not any(r.paragraphs for r in response.results)
    assert all("refused" in issue.reason for issue in response.issues if issue.stage == "fetch")
    assert not [r for r in web.requests if r.startswith("/page/")]


def test_searxng_passes_its_options_and_refuses_bad_ones(web):
    from crag_shared.web.searxng import SearXNGSearch

    provider(web, "searxng", categories=["general", "science"], language="de", time_range="year",
             engines="wikipedia").search(QUERY)
    sent = [r for r in web.requests if r.startswith("/searxng/search")][-1]
    for part in ("format=json", "categories=general%2Cscience", "language=de", "time_range=year", "engines=wikipedia"):
        assert part in sent
    with pytest.raises(ValueError, match="time_range"):
        SearXNGSearch("http://searx.local", time_range="decade")
    with pytest.raises(ValueError, match="base_url"):
        SearXNGSearch("searx.local")


@pytest.mark.parametrize("name,env", [("brave", "BRAVE_API_KEY"), ("tavily", "TAVILY_API_KEY"),
                                      ("exa", "EXA_API_KEY")])
def test_a_provider_without_a_key_fails_at_construction_naming_the_variable(name, env, monkeypatch):
    from crag_shared.web.brave import BraveSearch
    from crag_shared.web.exa import ExaSearch
    from crag_shared.web.tavily import TavilySearch

    monkeypatch.delenv(env, raising=False)
    cls = {"brave": BraveSearch, "tavily": TavilySearch, "exa": ExaSearch}[name]
    with pytest.raises(ValueError, match=env):
        cls()


@pytest.mark.parametrize("name", PROVIDERS)
def test_the_corrector_gets_web_knowledge_from_each_provider(web, name):
    result = Corrector(web_search=provider(web, name)).correct(
        QUERY, ["The Great Barrier Reef lies off the coast of Queensland."])
    assert result.external and any("1818" in strip.text for strip in result.external)


def test_an_exa_answer_inflating_past_the_cap_is_cut_not_read():
    import gzip

    import httpx

    from crag_shared.web.exa import ExaSearch

    bomb = gzip.compress(gzip.compress(b'{"results": [' + b" " * 50_000_000 + b"]}"))

    class Bomb(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request):
            return httpx.Response(200, headers={"content-encoding": "gzip, gzip"}, stream=httpx.ByteStream(bomb))

    search = ExaSearch(api_key="k-0123456789", fetch_pages=False, transport=Bomb())
    with pytest.raises(WebSearchError, match="larger than"):
        search.search(QUERY)


# -- DDGS: the public engines it scrapes stand in on loopback, behind the proxy ddgs is given ---------------
def ddgs(fake, **kwargs):
    from crag_shared.web.ddgs import DDGSSearch

    kwargs.setdefault("fetcher", PageFetcher(allow_private_addresses=LOOPBACK, retries=0))
    return DDGSSearch(backend="duckduckgo", proxy=fake.proxy, verify=False, **kwargs)


@pytest.fixture
def duckduckgo(web):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from ddgs_fake import FakeDuckDuckGo

    results = [{"title": "Henry Feilden - Wikipedia", "href": web.page_url("feilden"),
                "body": "Henry Feilden (1818-1875) was a Blackburn politician"}]
    with FakeDuckDuckGo(results) as fake:
        yield fake


def test_ddgs_results_are_fetched_and_refined_like_any_provider(web, duckduckgo):
    search = ddgs(duckduckgo)
    for response in (search.search(QUERY), asyncio.run(search.asearch(QUERY))):
        assert [r.url for r in response.results] == [web.page_url("feilden")]
        assert any(TEXT in p for p in response.results[0].paragraphs)
    assert duckduckgo.hosts[0].startswith("html.duckduckgo.com") and "Feilden" in duckduckgo.queries[0]
    result = Corrector(web_search=search).correct(QUERY, ["The Great Barrier Reef lies off Queensland."])
    assert any("1818" in strip.text for strip in result.external)


def test_ddgs_without_results_is_an_empty_answer_and_a_slow_engine_times_out(web, duckduckgo):
    import time

    duckduckgo.results = []
    assert ddgs(duckduckgo).search(QUERY).results == []
    duckduckgo.results = [{"title": "t", "href": web.page_url("feilden"), "body": "Feilden"}]
    duckduckgo.delay = 5
    started = time.monotonic()
    with pytest.raises(WebSearchError, match="timed out"):
        ddgs(duckduckgo, timeout=1.0).search(QUERY)
    assert time.monotonic() - started < 3


def test_ddgs_errors_never_show_the_proxy_credentials():
    from crag_shared.web.ddgs import DDGSSearch

    with socket_closed() as port:
        search = DDGSSearch(backend="duckduckgo", proxy=f"http://user:s3cret-pw@127.0.0.1:{port}", timeout=2.0)
        with pytest.raises(WebSearchError) as caught:
            search.search(QUERY)
    assert "s3cret-pw" not in str(caught.value) and "s3cret-pw" not in repr(search)
    assert "Connection refused" in str(caught.value)


def socket_closed():
    import contextlib
    import socket

    @contextlib.contextmanager
    def closed():
        probe = socket.create_server(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        yield port

    return closed()


@pytest.mark.parametrize("name", PROVIDERS)
@pytest.mark.parametrize("fault", ["trickle", "trickle_headers"])
def test_an_answer_sent_a_byte_at_a_time_ends_by_the_timeout_sync_and_async(web, name, fault):
    import time

    web.search_fault = fault
    search = provider(web, name, timeout=1.0)
    for call in (lambda: search.search(QUERY), lambda: asyncio.run(search.asearch(QUERY))):
        started = time.monotonic()
        with pytest.raises(WebSearchError, match="timed out"):
            call()
        assert time.monotonic() - started < 2.0
