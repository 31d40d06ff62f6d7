"""Stores: web strips written back to a document store keep their true origin and provenance when they
are retrieved and corrected again (write → retrieve → CRAG), in both frameworks."""

import pytest

from crag_shared.demo import recorded_web_path

QUESTION = "What is the capital of Mongolia?"


def test_haystack_web_strips_written_back_stay_web_strips():
    pytest.importorskip("haystack")
    from haystack import Document
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.components.writers import DocumentWriter
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    from crag_haystack import CRAG, ReplayWebSearch

    first = CRAG(web_search=ReplayWebSearch(str(recorded_web_path())))
    first.warm_up()
    web_strips = first.run(query=QUESTION, documents=[Document(content="Honey bees live in colonies.")])["documents"]
    assert web_strips and {d.meta["crag_origin"] for d in web_strips} == {"web"}
    store = InMemoryDocumentStore()
    DocumentWriter(document_store=store).run(documents=web_strips)
    retrieved = InMemoryBM25Retriever(store, top_k=5).run(query=QUESTION)["documents"]
    again = CRAG().run(query=QUESTION, documents=retrieved)["documents"]
    assert again and all(d.meta["crag_origin"] == "web" for d in again)
    assert all(d.meta["web_source"].endswith("(untrusted web page)") and d.meta["url"].startswith("https://")
               for d in again)


def test_llamaindex_web_nodes_stored_and_retrieved_stay_web_nodes():
    pytest.importorskip("llama_index.core")
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode

    from crag_llamaindex import CRAGPostprocessor
    from crag_llamaindex.testing import HashingEmbedding
    from crag_shared import ReplaySearch

    first = CRAGPostprocessor(web_search=ReplaySearch(recorded_web_path()))
    nodes, _ = first.correct([NodeWithScore(node=TextNode(text="Honey bees live in colonies."))], QueryBundle(QUESTION))
    assert nodes and {n.node.metadata["crag_origin"] for n in nodes} == {"web"}
    index = VectorStoreIndex([n.node for n in nodes], embed_model=HashingEmbedding())
    retrieved = index.as_retriever(similarity_top_k=5).retrieve(QUESTION)
    again, _ = CRAGPostprocessor().correct(retrieved, QueryBundle(QUESTION))
    assert again and all(n.node.metadata["crag_origin"] == "web" for n in again)
    shown = again[0].node.get_content(metadata_mode=MetadataMode.LLM)
    assert "(untrusted web page)" in shown and "crag_origin" not in shown


def test_haystack_strips_of_split_documents_say_where_they_sit_in_the_original():
    pytest.importorskip("haystack")
    from haystack import Document
    from haystack.components.preprocessors import DocumentSplitter

    from crag_haystack import CRAG

    original = ("The Eiffel Tower is in Paris. It opened in 1889. " * 3
                + "Albert Einstein was born in Ulm in 1879. He worked in Bern.")
    chunks = DocumentSplitter(split_by="word", split_length=10, split_overlap=0).run(
        documents=[Document(content=original)])["documents"]
    out = CRAG().run(query="When was Albert Einstein born?", documents=chunks)
    strips = out["documents"]
    assert strips and all("crag_document_start" in s.meta for s in strips)
    for strip in strips:
        start, end = strip.meta["crag_document_start"], strip.meta["crag_document_end"]
        assert original[start:end] == strip.content
    assert any(s.meta["crag_start"] != s.meta["crag_document_start"] for s in strips)  # chunk ≠ Document offsets
