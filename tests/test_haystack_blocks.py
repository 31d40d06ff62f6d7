"""CRAG as Haystack users ship it: a SuperComponent block over their retriever, and a tool for Haystack's
Agent (the example, offline). Runs on the declared floor, the newest 2.x and 3.x."""

import importlib.util
from pathlib import Path

import pytest
from haystack import Document, Pipeline
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.document_stores.in_memory import InMemoryDocumentStore

from crag_haystack import CRAG, CorrectiveRetriever, knowledge_text
from crag_shared.demo import QUESTIONS, corpus

CORRECT_Q, AMBIGUOUS_Q, INCORRECT_Q = QUESTIONS
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def retriever():
    store = InMemoryDocumentStore()
    store.write_documents([Document(content=p.text, meta={"title": p.title}) for p in corpus()])
    return InMemoryBM25Retriever(store, top_k=3)


def test_the_block_retrieves_and_corrects_as_crag_does(retriever):
    block = CorrectiveRetriever(retriever)
    for question in QUESTIONS:
        out = block.run(query=question)
        documents = retriever.run(query=question)["documents"]
        expected = CRAG().run(query=question, documents=documents)
        assert out["action"] == expected["action"] and out["scores"] == expected["scores"]
        assert [d.content for d in out.get("documents", [])] == [d.content for d in expected.get("documents", [])]
        assert ("abstention" in out) == ("abstention" in expected)
    assert "irrelevant" in block.run(query=INCORRECT_Q)["abstention"]


def test_the_block_saves_with_its_retriever_and_crag_settings(retriever):
    pipeline = Pipeline()
    pipeline.add_component("search", CorrectiveRetriever(retriever, crag=CRAG(upper=0.4, strip_top_k=2)))
    saved = pipeline.dumps()
    assert "haystack_integrations.components.retrievers.crag.CorrectiveRetriever" in saved
    loaded = Pipeline.loads(saved).get_component("search")
    assert isinstance(loaded, CorrectiveRetriever) and loaded.crag.config.upper == 0.4
    assert loaded.crag.config.strip_top_k == 2 and isinstance(loaded.retriever, InMemoryBM25Retriever)
    with pytest.raises(TypeError, match="crag must be"):
        CorrectiveRetriever(retriever, crag="lexical")


def test_the_tool_result_an_llm_reads():
    assert knowledge_text({"abstention": "no web search configured"}).startswith("No relevant knowledge found")
    web = Document(content="Ulaanbaatar is\nthe capital.", meta={"web_source": "https://x.org (untrusted web page)"})
    expected = "- Ulaanbaatar is the capital. [from https://x.org (untrusted web page)]"
    assert knowledge_text({"documents": [web]}) == expected


def test_the_agent_example_answers_from_crag_and_hears_no_knowledge(capsys):
    spec = importlib.util.spec_from_file_location("haystack_agent", ROOT / "examples" / "haystack_agent.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    example.main()
    designed, mongolia = capsys.readouterr().out.strip().splitlines()
    assert "Jørn Utzon" in designed
    assert mongolia.endswith("(no web search configured)).") and "No relevant knowledge found" in mongolia


def test_every_component_documents_its_run_and_shows_its_use():
    """As Haystack documents its own components: `:param:`/`:returns:` on run, a usage example on the class,
    and the tuning arguments keyword-only."""
    import inspect

    import crag_haystack

    for name in crag_haystack.__all__:
        cls = getattr(crag_haystack, name)
        if not hasattr(cls, "__haystack_input__") and not hasattr(cls, "run"):
            continue
        assert "```python" in (cls.__doc__ or ""), f"{name}: no usage example"
        for method in ("run", "run_async"):
            run = getattr(cls, method, None)
            if run is None:
                continue
            doc = inspect.getdoc(run) or ""
            assert ":returns:" in doc, f"{name}.{method}: no :returns:"
            parameters = list(inspect.signature(run).parameters.values())[1:]
            assert all(f":param {p.name}:" in doc for p in parameters if p.kind is not p.VAR_KEYWORD), (
                f"{name}.{method}: an undocumented parameter")
            optional = [p for p in parameters if p.default is not p.empty and p.name not in ("documents",)]
            assert all(p.kind is p.KEYWORD_ONLY for p in optional if p.name in (
                "upper", "lower", "query_embedding", "strip_top_k", "top_k")), f"{name}.{method}: positional tuning"
