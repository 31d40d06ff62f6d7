"""The web layer against a real loopback server: search faults, page faults, SSRF guard, sync and async."""

import asyncio

import pytest

from crag_shared import Action, Corrector, Origin, WebSearchError
from crag_shared.web.fetch import PageFetcher
from crag_shared.web.search_engine import prefer_wikipedia
from crag_shared.web.serpapi import SerpAPISearch

LOOPBACK = ["127.0.0.1/32"]

QUERY = "What is Henry Feilden's occupation?"
OFF_TOPIC = ["The Eiffel Tower stands in Paris."]


def test_search_fetches_and_extracts_titled_paragraphs(serpapi_search, fake_web):
    response = serpapi_search().search("Henry Feilden, occupation", top_k=5)
    first = response.results[0]
    assert first.title == "Henry Feilden (Conservative politician)" and first.url == fake_web.page_url("feilden")
    assert first.paragraphs[0].startswith("Henry Feilden (Conservative politician): Henry Master Feilden")
    assert all("Short." not in p for p in first.paragraphs)  # too-short paragraphs are dropped
    assert all("Footer" not in p and "Home | Search" not in p for p in first.paragraphs)  # boilerplate gone
    assert response.issues == []
    search = next(r for r in fake_web.requests if r.startswith("/search"))
    assert "engine=google" in search and "q=Henry+Feilden%2C+occupation" in search


def test_corrector_uses_fetched_pages_for_incorrect(serpapi_search):
    result = Corrector(web_search=serpapi_search()).correct(QUERY, OFF_TOPIC)
    assert result.action is Action.INCORRECT and result.external
    assert result.external[0].text.startswith("Henry Feilden (Conservative politician):")
    assert result.fallbacks == []


@pytest.mark.parametrize("fault,reason", [
    ("401", "SerpAPI HTTP 401: Invalid API key."),
    ("429", "SerpAPI HTTP 429"),
    ("500", "SerpAPI HTTP 500"),
    ("timeout", "SerpAPI timed out"),
    ("malformed", "malformed JSON"),
    ("error200", "SerpAPI error: Unsupported `gl` parameter."),
    ("empty", "web search returned no results"),
])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_search_faults_never_escape_the_corrector(serpapi_search, fake_web, fault, reason, mode):
    fake_web.search_fault = fault
    corrector = Corrector(web_search=serpapi_search())
    if mode == "sync":
        result = corrector.correct(QUERY, OFF_TOPIC)
    else:
        result = asyncio.run(corrector.acorrect(QUERY, OFF_TOPIC))
    assert result.action is Action.INCORRECT
    assert reason in result.fallbacks[-1].reason and reason in result.web_missing
    assert result.knowledge == [] and result.abstention.code == "incorrect"  # the paper: abstain, say why
    assert reason in result.abstention.reason and result.fallbacks[-1].applied.startswith("abstained")
    kept = Corrector(web_search=corrector.web_search, on_web_failure="keep").correct(QUERY, OFF_TOPIC)
    assert [s.origin for s in kept.knowledge] == [Origin.INTERNAL]  # opted in: internal passages kept, flagged
    assert kept.fallbacks[-1].applied.startswith("kept the internal passages")


def test_wrong_key_is_a_401_and_the_key_is_never_shown(serpapi_search):
    search = serpapi_search(api_key="secret-wrong-key")
    with pytest.raises(WebSearchError) as caught:
        search.search("anything")
    assert "401" in str(caught.value) and "secret-wrong-key" not in str(caught.value)
    assert "secret-wrong-key" not in repr(search)


def test_missing_api_key_fails_at_construction(monkeypatch):
    monkeypatch.delenv("SERPAPI_API_KEY", raising=False)
    with pytest.raises(ValueError, match="SERPAPI_API_KEY"):
        SerpAPISearch()
    monkeypatch.setenv("SERPAPI_API_KEY", "from-env")
    assert SerpAPISearch()._api_key.reveal() == "from-env"


def page_fault_cases(web):
    web.add("missing404", "Missing", ["never served"], status=404)
    web.add("broken500", "Broken", ["never served"], status=500)
    web.add("slow", "Slow", ["too slow to matter for this query at all"], delay=4.0)
    web.add("pdf", "A PDF", body=b"%PDF-1.4 binary", content_type="application/pdf")
    web.add("huge", "Huge page", ["Henry Feilden huge page paragraph that comes first."], size=10_000_000)
    web.add("loop", "Loop", redirect="/page/loop2")
    web.add("loop2", "Loop 2", redirect="/page/loop")
    web.add("to-loopback", "Sneaky", redirect="http://127.0.0.2:9/admin")
    web.add("to-private", "Sneakier", redirect="http://10.0.0.1/admin")
    web.add("badbytes", "Bad bytes", body=b"<html><body><h1>Bad bytes</h1><p>Henry Feilden caf\xe9 \xff\xfe "
            b"politician text long enough</p></body></html>", content_type="text/html")
    web.add("empty", "Empty", body=b"", content_type="text/html")
    return {
        "missing404": "HTTP 404", "broken500": "HTTP 500", "slow": "not finished within",
        "pdf": "skipped content type application/pdf", "huge": "page cut at", "loop": "redirect loop",
        "to-loopback": "refused: 127.0.0.2 resolves to a non-public address",
        "to-private": "refused: 10.0.0.1 resolves to a non-public address", "empty": "empty body",
    }


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_page_faults_are_reported_and_good_pages_still_count(serpapi_search, fake_web, mode):
    expected = page_fault_cases(fake_web)
    fetcher = PageFetcher(allow_private_addresses=LOOPBACK, timeout=5, deadline=2.5, max_bytes=2_000_000,
                          retries=1, backoff=0.05, concurrency=20)
    corrector = Corrector(web_search=serpapi_search(fetcher=fetcher), web_top_k=20)
    result = corrector.correct(QUERY, OFF_TOPIC) if mode == "sync" else asyncio.run(
        corrector.acorrect(QUERY, OFF_TOPIC))
    issues = {i["url"].rsplit("/", 1)[-1]: i["reason"] for i in result.trace.find("web_search")[0].issues}
    for name, reason in expected.items():
        assert reason in issues[name], (name, issues.get(name))
    assert result.action is Action.INCORRECT and result.fallbacks == []
    assert any(s.url == fake_web.page_url("feilden") for s in result.external)  # the good page still counts
    kept_urls = {s.url for s in result.external}
    assert fake_web.page_url("badbytes") in {r.url for r in result.web_results}
    assert not kept_urls & {fake_web.page_url(n) for n in expected if n != "huge"}


def test_undecodable_bytes_are_replaced_not_fatal(fake_web):
    fake_web.add("badbytes", "Bad", body=b"<p>caf\xe9 \xff\xfe politician</p>", content_type="text/plain")
    fake_web.add("latin", "Latin", body="<p>café politician</p>".encode("latin-1"),
                 content_type="text/html; charset=iso-8859-1")
    pages = PageFetcher(allow_private_addresses=LOOPBACK).fetch_all_sync(
        [fake_web.page_url("badbytes"), fake_web.page_url("latin")])
    assert pages[0].error is None and "politician" in pages[0].text
    assert "café" in pages[1].text


def test_loopback_is_refused_by_default(fake_web):
    page = PageFetcher().fetch_all_sync([fake_web.page_url("feilden")])[0]
    assert page.error.startswith("refused: 127.0.0.1 resolves to a non-public address")
    assert not any(r.startswith("/page/") for r in fake_web.requests)  # refused before connecting
    assert PageFetcher(allow_private_addresses=True).fetch_all_sync([fake_web.page_url("feilden")])[0].text


def test_retries_transient_errors_within_the_deadline(fake_web):
    from crag_shared.testing import FakePage

    served = []

    class Flaky(FakePage):
        @property
        def status(self):
            served.append(1)
            return 503 if len(served) < 3 else 200

        @status.setter
        def status(self, value):
            pass

    fake_web.pages["flaky"] = Flaky("Flaky", ["Recovered after two 503 answers, long enough."])
    page = PageFetcher(allow_private_addresses=LOOPBACK, retries=2, backoff=0.01).fetch_all_sync(
        [fake_web.page_url("flaky")])[0]
    assert page.error is None and "Recovered" in page.text and len(served) == 3


def test_all_pages_failing_falls_back_to_snippets(serpapi_search, fake_web):
    for page in fake_web.pages.values():
        page.status = 500
        page.snippet = "Henry Feilden was an English Conservative politician (snippet)."
    result = Corrector(web_search=serpapi_search()).correct(QUERY, OFF_TOPIC)
    assert result.external and result.external[0].text.endswith("(snippet).")
    assert result.fallbacks[0].step == "web_pages" and result.fallbacks[0].applied == "used the search snippets"


async def test_sync_search_inside_a_running_loop(serpapi_search):
    response = serpapi_search().search("Henry Feilden")  # Jupyter-style: a loop is already running here
    assert response.results and response.results[0].paragraphs


def test_wiki_mode_prefers_wikipedia_and_can_prefix(serpapi_search, fake_web):
    hits = [{"link": "https://example.com/a"}, {"link": "https://en.wikipedia.org/wiki/B"},
            {"link": "https://de.wikipedia.org/wiki/C"}, {"link": "https://notwikipedia.org/d"}]
    assert [h["link"][-1] for h in prefer_wikipedia(hits, "wiki")] == ["B", "C", "a", "d"]
    assert prefer_wikipedia(hits, "all") == hits
    serpapi_search(wiki_prefix=True).search("Henry Feilden")
    assert any("q=Wikipedia%2C+Henry+Feilden" in r for r in fake_web.requests)
    serpapi_search(mode="all", wiki_prefix=True, fetch_pages=False).search("Blackburn")
    assert any("q=Blackburn&" in r or r.endswith("q=Blackburn") for r in fake_web.requests)


def test_params_pass_through(serpapi_search, fake_web):
    serpapi_search(hl="de", gl="at", location="Vienna", engine="bing", num_results=7).search("x")
    request = [r for r in fake_web.requests if r.startswith("/search")][-1]
    for part in ("hl=de", "gl=at", "location=Vienna", "engine=bing", "num=7"):
        assert part in request


def serper(fake_web, **kwargs):
    from crag_shared import SerperSearch

    fetcher = PageFetcher(allow_private_addresses=LOOPBACK, timeout=2, deadline=3)
    return SerperSearch(api_key=kwargs.pop("api_key", "test-key"), base_url=f"{fake_web.url}/serper",
                        timeout=1.5, fetcher=fetcher, **kwargs)


def test_serper_provider_searches_and_fetches(fake_web):
    response = serper(fake_web, gl="uk").search("Henry Feilden, occupation")
    assert response.results[0].paragraphs[0].startswith("Henry Feilden (Conservative politician):")
    assert fake_web.serper_bodies[-1] == {"q": "Henry Feilden, occupation", "num": 10, "gl": "uk"}


@pytest.mark.parametrize("fault,reason", [("401", "Serper HTTP 401"), ("429", "Serper HTTP 429"),
                                          ("500", "Serper HTTP 500"), ("timeout", "Serper timed out"),
                                          ("malformed", "malformed JSON")])
def test_serper_faults_fall_back(fake_web, fault, reason):
    fake_web.search_fault = fault
    result = Corrector(web_search=serper(fake_web)).correct(QUERY, OFF_TOPIC)
    assert reason in result.fallbacks[-1].reason and result.abstained and reason in result.abstention.reason


def test_serper_needs_a_key(monkeypatch):
    from crag_shared import SerperSearch

    monkeypatch.delenv("SERPER_API_KEY", raising=False)
    with pytest.raises(ValueError, match="SERPER_API_KEY"):
        SerperSearch()


def test_a_page_that_breaks_processing_is_one_failed_page(fake_web):
    async def process(page):
        if page.url.endswith("/feilden"):
            raise ImportError("extractor missing a module")
        return page

    urls = [fake_web.page_url("feilden"), fake_web.page_url("blackburn")]
    pages = asyncio.run(PageFetcher(allow_private_addresses=LOOPBACK).fetch_all(urls, process))
    assert pages[0].error == "extraction failed: ImportError: extractor missing a module"
    assert pages[1].error is None and "Blackburn" in pages[1].text
