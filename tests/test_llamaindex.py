"""crag_llamaindex against a real VectorStoreIndex, a deterministic CustomLLM and the real web layer."""

import asyncio
import json

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core import Document, Settings, VectorStoreIndex
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import NodeRelationship, NodeWithScore, QueryBundle, TextNode

from crag_llamaindex import (
    CRAGActionEvent,
    CRAGFallbackEvent,
    CRAGPostprocessor,
    CRAGQueryEngine,
    CRAGWebSearchEvent,
    WebSearchRetriever,
)
from crag_llamaindex.testing import HashingEmbedding, RuleLLM, recording_events
from crag_shared.adapter import NO_KNOWLEDGE_ANSWER
from crag_shared.demo import QUESTIONS, build_corrector, corpus
from crag_shared.testing import keyword_reply

CORRECT_Q, AMBIGUOUS_Q, INCORRECT_Q = QUESTIONS
EXPECTED = {CORRECT_Q: "correct", AMBIGUOUS_Q: "ambiguous", INCORRECT_Q: "incorrect"}


@pytest.fixture
def llm():
    previous = Settings._llm, Settings._embed_model
    fake = RuleLLM()
    Settings.llm, Settings.embed_model = fake, HashingEmbedding()
    yield fake
    Settings._llm, Settings._embed_model = previous


@pytest.fixture
def index(llm):
    docs = [Document(text=p.text, id_=p.id, metadata={"title": p.title}) for p in corpus()]
    return VectorStoreIndex.from_documents(docs)


@pytest.fixture
def web():
    return build_corrector().web_search  # ReplaySearch over the demo's recorded pages


@pytest.fixture
def events():
    with recording_events() as recorder:
        yield recorder.events


@pytest.mark.parametrize("question", QUESTIONS)
def test_postprocessor_in_a_standard_query_engine(index, web, question):
    engine = RetrieverQueryEngine.from_args(index.as_retriever(similarity_top_k=3),
                                            node_postprocessors=[CRAGPostprocessor(web_search=web,
                                                                                   evaluator="default")])
    response = engine.query(question)
    assert {n.node.metadata["crag_action"] for n in response.source_nodes} == {EXPECTED[question]}
    assert str(response).startswith("[offline stand-in LLM]")


@pytest.mark.parametrize("question", QUESTIONS)
def test_query_engine_sync_async_and_streaming_agree(index, web, question):
    engine = CRAGQueryEngine.from_index(index, similarity_top_k=3, web_search=web, evaluator="default")
    sync = engine.query(question)
    assert sync.metadata["crag"]["action"] == EXPECTED[question]
    asynchronous = asyncio.run(engine.aquery(question))
    assert asynchronous.metadata["crag"]["action"] == EXPECTED[question]
    assert str(asynchronous) == str(sync)
    streaming = CRAGQueryEngine.from_index(index, similarity_top_k=3, web_search=web, streaming=True,
                                           evaluator="default")
    streamed = streaming.query(question)
    assert "".join(streamed.response_gen) == str(sync)
    assert streamed.metadata["crag"]["action"] == EXPECTED[question]

    async def consume():
        response = await streaming.aquery(question)
        return "".join([t async for t in response.async_response_gen()]), response.metadata

    text, metadata = asyncio.run(consume())
    assert text == str(sync) and metadata["crag"]["action"] == EXPECTED[question]


def test_metadata_holds_scores_rewrite_urls_and_trace(index, web):
    response = CRAGQueryEngine.from_index(index, similarity_top_k=3, web_search=web).query(INCORRECT_Q)
    crag = response.metadata["crag"]
    assert crag["rewritten_query"] == "capital, Mongolia" and len(crag["scores"]) == 3
    assert crag["web_urls"][0] == "https://en.wikipedia.org/wiki/Ulaanbaatar"
    assert {s["step"] for s in crag["trace"]["steps"]} >= {"evaluate", "decide", "rewrite", "web_search"}
    json.dumps(crag)  # JSON-ready


def test_strip_nodes_carry_provenance_and_source_relationship(index, web):
    retrieved = index.as_retriever(similarity_top_k=3).retrieve(AMBIGUOUS_Q)
    nodes = CRAGPostprocessor(web_search=web, evaluator="default").postprocess_nodes(retrieved, query_str=AMBIGUOUS_Q)
    internal = [n for n in nodes if n.node.metadata["crag_origin"] == "internal"]
    external = [n for n in nodes if n.node.metadata["crag_origin"] == "web"]
    assert internal and external
    by_id = {r.node.node_id: r for r in retrieved}
    for item in internal:
        chunk = item.node.relationships[NodeRelationship.PARENT]  # the chunk; SOURCE stays its Document
        original = by_id[chunk.node_id].node
        assert item.node.ref_doc_id == original.ref_doc_id is not None
        meta = item.node.metadata
        assert meta["crag_source_id"] == chunk.node_id
        assert original.get_content()[meta["crag_start"]:meta["crag_end"]] == item.node.get_content()
        assert item.score == meta["crag_score"] and meta["title"] == original.metadata["title"]
    assert all(n.node.metadata["url"].startswith("https://en.wikipedia.org/") for n in external)
    assert "crag_score" not in external[0].node.get_content(metadata_mode="llm")  # bookkeeping hidden from LLM


def test_return_original_nodes_untouched(index):
    retrieved = index.as_retriever(similarity_top_k=3).retrieve(CORRECT_Q)
    before = [dict(r.node.metadata) for r in retrieved]
    nodes = CRAGPostprocessor(return_strips=False).postprocess_nodes(retrieved, query_str=CORRECT_Q)
    assert [n.node.node_id for n in nodes] == [retrieved[0].node.node_id]
    assert nodes[0].node is retrieved[0].node and [dict(r.node.metadata) for r in retrieved] == before


def test_missing_query_bundle_is_a_value_error():
    with pytest.raises(ValueError, match="needs the query"):
        CRAGPostprocessor().postprocess_nodes([NodeWithScore(node=TextNode(text="x"))])


def test_events_are_emitted(index, web, events):
    CRAGQueryEngine.from_index(index, similarity_top_k=3, web_search=web).query(INCORRECT_Q)
    action = [e for e in events if isinstance(e, CRAGActionEvent)]
    searches = [e for e in events if isinstance(e, CRAGWebSearchEvent)]
    assert action[0].action == "incorrect" and len(action[0].scores) == 3
    assert searches[0].search_query == "capital, Mongolia" and searches[0].urls
    assert any(type(e).__name__ == "QueryStartEvent" for e in events)  # CRAG sits inside normal tracing


def test_secrets_never_reach_model_dump(monkeypatch):
    from crag_shared import SerpAPISearch

    post = CRAGPostprocessor(web_search=SerpAPISearch(api_key="sk-very-secret"), upper=0.4)
    dumped = json.dumps(post.model_dump(), default=str)
    assert "sk-very-secret" not in dumped and '"upper": 0.4' in dumped
    assert post.model_dump()["class_name"] == "CRAGPostprocessor"
    assert "sk-very-secret" not in repr(post)


def test_web_failure_abstains_and_says_why_in_response_metadata(index, llm, fake_web, serpapi_search, events):
    fake_web.search_fault = "500"
    engine = CRAGQueryEngine.from_index(index, similarity_top_k=3, web_search=serpapi_search())
    response = engine.query(INCORRECT_Q)
    crag = response.metadata["crag"]
    assert crag["fallbacks"][-1]["step"] == "web_search" and "SerpAPI HTTP 500" in crag["fallbacks"][-1]["reason"]
    assert crag["abstained"] and "SerpAPI HTTP 500" in crag["abstention"]["reason"]
    assert str(response) == NO_KNOWLEDGE_ANSWER and response.source_nodes == []
    assert all(keyword_reply(p) is not None for p in llm.prompts)  # the rewrite only: never to answer
    assert any(isinstance(e, CRAGFallbackEvent) for e in events)
    keeping = CRAGQueryEngine.from_index(index, similarity_top_k=3, web_search=serpapi_search(),
                                         on_web_failure="keep").query(INCORRECT_Q)
    assert keeping.source_nodes and all("crag_fallbacks" in n.node.metadata for n in keeping.source_nodes)


@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_abstention_answers_without_calling_the_llm(index, llm, streaming, mode):
    engine = CRAGQueryEngine.from_index(index, similarity_top_k=3, streaming=streaming)
    response = engine.query(INCORRECT_Q) if mode == "sync" else asyncio.run(engine.aquery(INCORRECT_Q))
    if streaming:
        text = "".join(response.response_gen) if mode == "sync" else asyncio.run(_joined(response.async_response_gen()))
    else:
        text = str(response)
    assert text == NO_KNOWLEDGE_ANSWER and response.source_nodes == [] and llm.prompts == []  # never asked
    crag = response.metadata["crag"]
    assert crag["action"] == "incorrect" and crag["abstention"]["code"] == "incorrect"
    assert "no web search configured" in crag["abstention"]["reason"]
    answered = engine.query(CORRECT_Q)  # a question the corpus answers still reaches the LLM
    if streaming:
        "".join(answered.response_gen)
    assert llm.prompts and not answered.metadata["crag"]["abstained"]


async def test_workflow_abstains_without_calling_the_llm(index, llm):
    from crag_llamaindex import CRAGWorkflow

    response = await CRAGWorkflow(index=index, similarity_top_k=3).run(query=INCORRECT_Q)
    assert str(response) == NO_KNOWLEDGE_ANSWER and llm.prompts == []
    assert response.metadata["crag"]["abstention"]["code"] == "incorrect"
    answered = await CRAGWorkflow(index=index, similarity_top_k=3).run(query=CORRECT_Q)
    assert llm.prompts and "Golden Gate" in str(answered)


async def _joined(generator):
    return "".join([token async for token in generator])


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_abstention_can_ask_the_llm_with_an_explicit_no_context_prompt(index, llm, mode):
    engine = CRAGQueryEngine.from_index(index, similarity_top_k=3, on_abstain="llm",
                                        no_knowledge_answer="unused")
    response = engine.query(INCORRECT_Q) if mode == "sync" else asyncio.run(engine.aquery(INCORRECT_Q))
    assert len(llm.prompts) == 1 and "do not guess" in llm.prompts[0] and INCORRECT_Q in llm.prompts[0]
    retrieved = [n.node.get_content() for n in index.as_retriever(similarity_top_k=3).retrieve(INCORRECT_Q)]
    assert not any(text in llm.prompts[0] for text in retrieved)  # no retrieved text reached the LLM
    assert str(response) != "unused" and response.metadata["crag"]["abstained"]
    engine.update_prompts({"no_context_prompt": "Q: {query_str} -- say you do not know."})
    engine.query(INCORRECT_Q)
    assert llm.prompts[-1] == f"Q: {INCORRECT_Q} -- say you do not know."
    with pytest.raises(ValueError, match="query_str"):
        CRAGQueryEngine.from_index(index, on_abstain="llm", no_context_prompt="no variable")
    with pytest.raises(ValueError, match="on_abstain"):
        CRAGQueryEngine.from_index(index, on_abstain="guess")


def test_postprocessor_hands_on_no_retrieved_text_on_abstention_and_unjudged_queries(index, llm):
    post = CRAGPostprocessor()
    nodes = index.as_retriever(similarity_top_k=3).retrieve(INCORRECT_Q)
    [note] = post.postprocess_nodes(nodes, query_str=INCORRECT_Q)  # the abstention, saying why
    assert note.node.node_id == "crag" and note.node.metadata["abstention"]["code"] == "incorrect"
    assert not any(n.node.get_content() in note.node.get_content() for n in nodes)
    assert CRAGPostprocessor(abstention_note=False).postprocess_nodes(nodes, query_str=INCORRECT_Q) == []
    kept, result = post.correct(nodes, QueryBundle("   "))
    assert kept == [] and result.action.value == "unjudged" and result.abstention.code == "empty_query"
    assert [p.id for p in result.passages] == [n.node.node_id for n in nodes]  # listed, never lost
    with pytest.raises(TypeError, match="query_bundle must be a QueryBundle"):
        post.postprocess_nodes(nodes, query_bundle="a plain string")
    with pytest.raises(TypeError, match="query must be a string"):
        post.postprocess_nodes(nodes, query_bundle=QueryBundle(query_str=None))


def test_no_web_search_is_said_once_at_info_not_warned_per_query(index, llm, caplog):
    import logging

    caplog.set_level(logging.INFO)
    engine = CRAGQueryEngine.from_index(index, similarity_top_k=3)
    for _ in range(3):
        engine.query(INCORRECT_Q)
    crag = [r for r in caplog.records if r.name.startswith("crag")]
    assert [r.levelno for r in crag] == [logging.INFO] and "no web search configured" in crag[0].getMessage()


def test_llm_judge_and_rewriter_use_the_llamaindex_llm(index, web):
    def rule(prompt):
        if "one line per document" in prompt:
            count = prompt.count('<document number="')
            return "\n".join(f"{i}: {'yes' if i == 1 else 'no'}" for i in range(1, count + 1))
        if keyword_reply(prompt) is not None:
            return "query: Golden Gate Bridge, opening"
        return "answer"

    judge_llm = RuleLLM(rule)
    post = CRAGPostprocessor(llm=judge_llm, evaluator="llm", web_search=web)
    retrieved = index.as_retriever(similarity_top_k=3).retrieve(CORRECT_Q)
    nodes, result = post.correct(retrieved, QueryBundle(CORRECT_Q))
    assert result.action.value == "correct" and result.scores[0] == 1.0
    # one batched call judged all passages; the strips were not sent back to the LLM, and the accepted
    # passage's strip keeps its acceptance (at least the upper threshold)
    assert sum("one line per document" in p for p in judge_llm.prompts) == 1 and len(judge_llm.prompts) == 1
    assert [n.node.metadata["crag_score"] >= result.thresholds[0] for n in nodes] == [True]


def test_web_search_retriever(web):
    nodes = WebSearchRetriever(web).retrieve(INCORRECT_Q)
    assert nodes and all(n.node.metadata["url"].startswith("https://en.wikipedia.org/") for n in nodes)
    assert any("Ulaanbaatar" in n.node.get_content() for n in nodes)
    assert asyncio.run(WebSearchRetriever(web).aretrieve(INCORRECT_Q))


def test_example_runs_offline():
    import subprocess
    import sys
    from pathlib import Path

    example = Path(__file__).resolve().parents[1] / "examples" / "llamaindex_quickstart.py"
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("OPENAI_API_KEY", "OLLAMA_HOST")}
    run = subprocess.run([sys.executable, str(example)], capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr
    assert "OFFLINE STAND-IN" in run.stdout
    for action in ("action: correct", "action: ambiguous", "action: incorrect"):
        assert action in run.stdout


def test_from_index_passes_retriever_options_such_as_filters_through():
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.vector_stores import ExactMatchFilter, MetadataFilters

    from crag_llamaindex import CRAGQueryEngine
    from crag_llamaindex.testing import HashingEmbedding, RuleLLM

    index = VectorStoreIndex.from_documents(
        [Document(text="The Golden Gate Bridge opened in May 1937.", metadata={"city": "sf"}),
         Document(text="The Golden Gate Bridge opened to traffic in 1937, linking San Francisco.",
                  metadata={"city": "other"})], embed_model=HashingEmbedding())
    filters = MetadataFilters(filters=[ExactMatchFilter(key="city", value="sf")])
    engine = CRAGQueryEngine.from_index(index, filters=filters, similarity_top_k=5, llm=RuleLLM(), top_n=3)
    response = engine.query("When did the Golden Gate Bridge open?")
    assert {n.node.metadata["city"] for n in response.source_nodes} == {"sf"}
    assert engine.crag.top_n == 3  # CRAG's own settings stay CRAG's
