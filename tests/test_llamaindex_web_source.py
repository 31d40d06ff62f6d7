"""A LlamaIndex retriever or a tool spec's search function as CRAG's web source."""

from __future__ import annotations

import pytest
from llama_index.core import Document
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from crag_llamaindex import CRAGPostprocessor
from crag_llamaindex.web_source import web_source
from crag_shared.web.fetch import PageFetcher

LOOPBACK = ["127.0.0.1/32"]
TEXT = "Henry Feilden was born in 1818 at Blackburn, Lancashire, and sat in Parliament for the borough."
QUERY = "Where was Henry Feilden born?"
OFF_TOPIC = [NodeWithScore(node=TextNode(text="The Great Barrier Reef lies off the coast of Queensland."), score=0.5)]


class LinkRetriever(BaseRetriever):
    """A web retriever as LlamaIndex integrations write them: nodes with the page's url in metadata."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        node = TextNode(text="Feilden, a Blackburn politician", metadata={"url": self.url, "title": "Henry Feilden"})
        return [NodeWithScore(node=node, score=1.0)]


@pytest.fixture
def web(crag_fake_web):
    crag_fake_web.add("feilden", "Henry Feilden", [TEXT, "He was made a baronet after his years in Parliament."])
    return crag_fake_web


@pytest.mark.parametrize("run", ["sync", "async"])
def test_a_retriever_is_the_web_source_and_its_links_are_fetched(web, run):
    import asyncio

    fetcher = PageFetcher(allow_private_addresses=LOOPBACK)
    crag = CRAGPostprocessor(web_search=web_source(LinkRetriever(web.page_url("feilden")), fetcher=fetcher))
    if run == "sync":
        nodes = crag.postprocess_nodes(OFF_TOPIC, query_str=QUERY)
    else:
        nodes = asyncio.run(crag.apostprocess_nodes(OFF_TOPIC, query_str=QUERY))
    assert any("1818" in n.node.get_content() for n in nodes)
    assert "/page/feilden" in web.requests


def test_a_tool_specs_search_function_is_the_web_source(web):
    def search(query: str) -> list[Document]:  # the shape of TavilyToolSpec.search and its kin
        return [Document(text="Henry Feilden, born 1818", metadata={"url": web.page_url("feilden")})]

    crag = CRAGPostprocessor(web_search=search)  # wrapped as it is; loopback pages refused: snippets
    nodes = crag.postprocess_nodes(OFF_TOPIC, query_str=QUERY)
    assert any("1818" in n.node.get_content() for n in nodes)
    assert "/page/feilden" not in web.requests


def test_anything_else_is_named():
    with pytest.raises(TypeError, match="got int"):
        web_source(42)
    with pytest.raises(TypeError, match="got str"):
        CRAGPostprocessor(web_search="serpapi")
