"""The application's own Haystack web-search component as CRAG's web source."""

from __future__ import annotations

import pytest
from haystack import Document, Pipeline, component

from crag_haystack import CRAG, ComponentWebSearch
from crag_haystack.testing import SearXNGDocumentsWebSearch

LOOPBACK = ["127.0.0.1/32"]
TEXT = "Henry Feilden was born in 1818 at Blackburn, Lancashire, and sat in Parliament for the borough."
QUERY = "Where was Henry Feilden born?"
OFF_TOPIC = [Document(content="The Great Barrier Reef lies off the coast of Queensland, Australia.",
                      meta={"source": "mine"})]


@pytest.fixture
def web(crag_fake_web):
    crag_fake_web.add("feilden", "Henry Feilden", [TEXT, "He was made a baronet after his years in Parliament."])
    return crag_fake_web


def test_crag_refines_the_pages_the_users_component_links(web):
    crag = CRAG(web_search=ComponentWebSearch(SearXNGDocumentsWebSearch(f"{web.url}/searxng"),
                                              allow_private_addresses=LOOPBACK))
    crag.warm_up()
    out = crag.run(query=QUERY, documents=OFF_TOPIC)
    assert any("1818" in d.content and d.meta.get("url") == web.page_url("feilden") for d in out["documents"])
    assert "/page/feilden" in web.requests  # fetched by crag's own fetcher, not taken from the snippet


def test_a_bare_component_is_wrapped_and_the_pipeline_round_trips_through_yaml(web):
    crag = CRAG(web_search=SearXNGDocumentsWebSearch(f"{web.url}/searxng"))
    assert isinstance(crag.web_search, ComponentWebSearch)
    pipeline = Pipeline()
    pipeline.add_component("crag", crag)
    loaded = Pipeline.loads(pipeline.dumps())
    inner = loaded.get_component("crag").web_search
    assert isinstance(inner, ComponentWebSearch) and isinstance(inner.search, SearXNGDocumentsWebSearch)
    assert inner.search.base_url == f"{web.url}/searxng"


def test_pages_stay_behind_the_guard_and_snippets_are_the_fallback(web):
    crag = CRAG(web_search=SearXNGDocumentsWebSearch(f"{web.url}/searxng"))  # loopback pages refused
    crag.warm_up()
    out = crag.run(query=QUERY, documents=OFF_TOPIC)
    assert "/page/feilden" not in web.requests
    assert any("1818" in d.content for d in out["documents"])  # the component's snippet


def test_a_component_without_query_or_outputs_is_named():
    @component
    class NoQuery:
        @component.output_types(documents=list[Document])
        def run(self, text: str) -> dict:
            return {"documents": []}

    @component
    class NoOutputs:
        @component.output_types(answers=list[str])
        def run(self, query: str) -> dict:
            return {"answers": []}

    with pytest.raises(TypeError, match="NoQuery"):
        ComponentWebSearch(NoQuery())
    search = ComponentWebSearch(NoOutputs())
    with pytest.raises(TypeError, match=r"NoOutputs\.run returned no `documents` or `links`"):
        search.provider.search(QUERY)


def test_a_failing_component_takes_the_crag_fallback(web):
    web.search_fault = "500"
    crag = CRAG(web_search=SearXNGDocumentsWebSearch(f"{web.url}/searxng"))
    crag.warm_up()
    out = crag.run(query=QUERY, documents=OFF_TOPIC)
    assert out["action"] == "incorrect" and "documents" not in out and out["abstention"]
    assert "web search failed" in str(out["crag"])


def test_any_crag_provider_as_a_component_with_its_key_a_secret(web, monkeypatch):
    from haystack.utils import Secret

    from crag_haystack import ProviderWebSearch

    monkeypatch.setenv("MY_BRAVE_KEY", web.api_key)
    search = ProviderWebSearch("brave", api_key=Secret.from_env_var("MY_BRAVE_KEY"),
                               options={"base_url": f"{web.url}/brave"}, allow_private_addresses=LOOPBACK)
    pipeline = Pipeline()
    pipeline.add_component("crag", CRAG(web_search=search))
    saved = pipeline.dumps()
    assert web.api_key not in saved and "MY_BRAVE_KEY" in saved
    loaded = Pipeline.loads(saved)
    out = loaded.run({"crag": {"query": QUERY, "documents": OFF_TOPIC}})["crag"]
    assert any("1818" in d.content for d in out["documents"])
    searxng = ProviderWebSearch(f"searxng:{web.url}/searxng", options={"language": "en"})
    assert searxng.run(query="Henry Feilden")["links"] == [web.page_url("feilden")]
    with pytest.raises(ValueError, match="must be one of serpapi, serper, searxng"):
        ProviderWebSearch("bing")
