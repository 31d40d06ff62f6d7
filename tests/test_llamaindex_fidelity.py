"""What a real LlamaIndex app hits after the happy path: file metadata through CitationQueryEngine,
configuration round trips, pickles, loud configuration errors, no-LLM and MockLLM rewrites, logging."""

import asyncio
import logging
import pickle

import pytest
from llama_index.core import Settings, SimpleDirectoryReader, VectorStoreIndex
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import CitationQueryEngine
from llama_index.core.schema import NodeRelationship, NodeWithScore, QueryBundle, TextNode

from crag_llamaindex import CRAGPostprocessor, CRAGQueryEngine, CRAGWorkflow
from crag_llamaindex.testing import RuleLLM, offline_settings
from crag_shared import CrossEncoderEvaluator, EvaluatorConfigurationError
from crag_shared.demo import QUESTIONS, build_corrector, corpus

CORRECT_Q, AMBIGUOUS_Q, INCORRECT_Q = QUESTIONS


@pytest.fixture
def settings():
    with offline_settings():
        yield


@pytest.fixture
def file_index(tmp_path, settings):
    for passage in corpus():
        (tmp_path / f"{passage.id}.txt").write_text(passage.text)
    docs = SimpleDirectoryReader(str(tmp_path), file_metadata=lambda path: {
        "file_name": path.rsplit("/", 1)[-1], "file_path": path, "page_label": "1", "team": "geo"}).load_data()
    for doc in docs:
        doc.excluded_llm_metadata_keys = ["file_path"]
    return VectorStoreIndex.from_documents(docs), docs


def test_strips_keep_file_metadata_through_citation_query_engine(file_index):
    index, docs = file_index
    crag = CRAGPostprocessor(web_search=build_corrector().web_search, evaluator="default")
    engine = CitationQueryEngine.from_args(index, similarity_top_k=3, node_postprocessors=[crag])
    response = engine.query(AMBIGUOUS_Q)
    internal = [n for n in response.source_nodes if n.node.metadata.get("crag_origin") == "internal"]
    web = [n for n in response.source_nodes if n.node.metadata.get("crag_origin") == "web"]
    assert internal and web
    doc_ids = {d.doc_id for d in docs}
    for item in internal:
        meta = item.node.metadata
        assert meta["file_name"].endswith(".txt") and meta["page_label"] == "1" and meta["team"] == "geo"
        assert meta["file_path"].endswith(meta["file_name"]) and "url" not in meta
        assert item.node.ref_doc_id in doc_ids  # the Document, not the chunk
        assert "file_path" in item.node.excluded_llm_metadata_keys
        assert "crag_score" in item.node.excluded_llm_metadata_keys
    shown = web[0].node.get_content(metadata_mode="llm")
    assert "(untrusted web page)" in shown and "crag_score" not in shown
    assert web[0].node.metadata["url"].startswith("https://")


def test_a_chunk_without_a_document_is_the_strips_source(settings):
    node = TextNode(text=corpus()[0].text, id_="chunk-1", metadata={"title": corpus()[0].title})
    nodes = CRAGPostprocessor().postprocess_nodes([NodeWithScore(node=node, score=1.0)],
                                                  QueryBundle(CORRECT_Q))
    assert nodes[0].node.relationships[NodeRelationship.SOURCE].node_id == "chunk-1"


def test_configuration_round_trips_every_way(settings, tmp_path):
    pp = CRAGPostprocessor(upper=0.4, lower=-0.2, refine_mode="selection", web_top_k=3, return_strips=False)
    rebuilt = [CRAGPostprocessor.from_dict(pp.to_dict()), CRAGPostprocessor.from_json(pp.to_json()),
               CRAGPostprocessor.model_validate(pp.model_dump()),
               CRAGPostprocessor(config=pp.to_dict()["config"], return_strips=False)]
    for other in rebuilt:
        assert other.config == pp.config and other.return_strips is pp.return_strips
        assert other.corrector.policy == pp.corrector.policy
        assert other.corrector.refiner.mode == "selection" and other.corrector.web_top_k == 3


def test_an_evaluator_instance_is_recorded_by_its_spec(settings, tiny_bert):
    pp = CRAGPostprocessor(evaluator=CrossEncoderEvaluator(str(tiny_bert)))
    assert pp.to_dict()["config"]["evaluator"] == f"cross-encoder:{tiny_bert}"
    assert isinstance(CRAGPostprocessor.from_dict(pp.to_dict()).corrector.evaluator, CrossEncoderEvaluator)


def test_a_typo_in_the_evaluator_path_fails_at_construction(settings, tmp_path):
    with pytest.raises(ValueError, match="no such file or directory"):
        CRAGPostprocessor(evaluator=f"cross-encoder:{tmp_path / 'typo'}")


def test_an_unloadable_model_fails_the_query_instead_of_turning_lexical(settings, tmp_path):
    (tmp_path / "empty").mkdir()
    pp = CRAGPostprocessor(evaluator=f"cross-encoder:{tmp_path / 'empty'}")
    with pytest.raises(EvaluatorConfigurationError, match="empty"):
        pp.postprocess_nodes([NodeWithScore(node=TextNode(text=corpus()[0].text))], QueryBundle(CORRECT_Q))


def test_pickle_keeps_the_configuration(settings):
    pp = CRAGPostprocessor(upper=0.3, web_search=build_corrector().web_search)
    other = pickle.loads(pickle.dumps(pp))
    assert other.config == pp.config and type(other.corrector.web_search).__name__ == "ReplaySearch"


def test_without_an_llm_the_keyword_rewrite_is_no_fallback():
    previous = Settings._llm
    Settings._llm = None
    try:
        _, result = CRAGPostprocessor(web_search=build_corrector().web_search).correct([], QueryBundle(INCORRECT_Q))
    finally:
        Settings._llm = previous
    assert result.trace.find("rewrite")[0].method == "keywords"
    assert not [f for f in result.fallbacks if f.step == "rewrite"]


def test_mock_llm_rewrites_are_refused_and_flagged():
    crag = CRAGPostprocessor(llm=MockLLM(max_tokens=40), web_search=build_corrector().web_search)
    _, result = crag.correct([], QueryBundle(INCORRECT_Q))
    rewrite = result.trace.find("rewrite")[0]
    assert rewrite.method == "keywords" and "text text" not in rewrite.query
    assert any(f.step == "rewrite" and "degenerate" in f.reason for f in result.fallbacks)


def test_fallbacks_are_logged_on_the_crag_logger(caplog):
    crag = CRAGPostprocessor(llm=MockLLM(max_tokens=40), web_search=build_corrector().web_search)
    with caplog.at_level(logging.WARNING, logger="crag"):
        crag.correct([], QueryBundle(INCORRECT_Q))
    assert any(r.name == "crag" and "CRAG fallback in rewrite" in r.getMessage() for r in caplog.records)


# -- prompts, workflow, pack ------------------------------------------------------------------------
@pytest.fixture
def demo_index(settings):
    from llama_index.core import Document

    docs = [Document(text=p.text, id_=p.id, metadata={"title": p.title}) for p in corpus()]
    return VectorStoreIndex.from_documents(docs)


def test_prompts_through_llamaindex_prompt_api(settings):
    from llama_index.core.prompts import PromptTemplate

    llm = RuleLLM(rule=lambda prompt: "query: custom, keywords")
    crag = CRAGPostprocessor(llm=llm, web_search=build_corrector().web_search)
    shown = crag.get_prompts()["rewrite_prompt"]
    assert "Extract at most three keywords" in shown.get_template() and shown.template_vars == ["query_str"]
    for template in ("Keywords for: {query_str}\nquery:", "Keywords for: {question}\nquery:"):  # LlamaIndex's or crag's
        crag.update_prompts({"rewrite_prompt": PromptTemplate(template)})
        _, result = crag.correct([], QueryBundle(INCORRECT_Q))
        assert llm.prompts[-1] == f"Keywords for: {INCORRECT_Q}\nquery:"
        assert result.rewritten_query == "custom, keywords"
    with pytest.raises(ValueError, match="placeholder"):
        crag.update_prompts({"rewrite_prompt": PromptTemplate("no slot")})
    judged = CRAGPostprocessor(llm=llm, evaluator="llm")
    assert "{query_str}" in judged.get_prompts()["judge_prompt"].get_template()
    with pytest.raises(ValueError, match="documents"):
        judged.update_prompts({"judge_prompt": PromptTemplate("{question} only")})
    engine = CRAGQueryEngine.from_index(VectorStoreIndex([]), llm=llm)
    assert "crag:rewrite_prompt" in engine.get_prompts()


async def _run_workflow(workflow, query):
    handler = workflow.run(query=query)
    names = [type(event).__name__ async for event in handler.stream_events()]
    return await handler, names


@pytest.mark.parametrize("question,action,path", [
    (CORRECT_Q, "correct", ["RetrievedEvent", "JudgedEvent", "RefineEvent", "KnowledgeEvent"]),
    (AMBIGUOUS_Q, "ambiguous", ["RetrievedEvent", "JudgedEvent", "SearchNeededEvent", "RefineEvent", "KnowledgeEvent"]),
    (INCORRECT_Q, "incorrect", ["RetrievedEvent", "JudgedEvent", "SearchNeededEvent", "RefineEvent",
                                "KnowledgeEvent"]),
])
def test_workflow_takes_each_actions_path_and_matches_the_postprocessor(demo_index, question, action, path):
    web = build_corrector().web_search
    workflow = CRAGWorkflow(index=demo_index, similarity_top_k=3, web_search=web, evaluator="default")
    response, names = asyncio.run(_run_workflow(workflow, question))  # from sync code
    assert names[:-1] == path and response.metadata["crag"]["action"] == action
    retrieved = demo_index.as_retriever(similarity_top_k=3).retrieve(question)
    nodes, result = CRAGPostprocessor(web_search=web, evaluator="default").correct(retrieved, QueryBundle(question))
    assert response.metadata["crag"]["scores"] == result.scores
    assert [n.node.get_content() for n in response.source_nodes] == [n.node.get_content() for n in nodes]


async def test_workflow_streams_its_answer(demo_index):
    workflow = CRAGWorkflow(index=demo_index, similarity_top_k=3, streaming=True)
    response = await workflow.run(query=CORRECT_Q)
    text = "".join([token async for token in response.async_response_gen()])
    assert "Golden Gate" in text and response.metadata["crag"]["action"] == "correct"


async def test_workflow_abstains_on_an_empty_query_and_refuses_a_missing_one(demo_index):
    from llama_index.core.workflow import WorkflowRuntimeError

    response = await CRAGWorkflow(index=demo_index).run(query="  ")
    assert response.metadata["crag"]["action"] == "unjudged" and response.metadata["crag"]["abstained"]
    with pytest.raises((TypeError, WorkflowRuntimeError), match="query"):
        await CRAGWorkflow(index=demo_index).run(query=None)


def test_workflow_needs_a_retriever_or_an_index():
    with pytest.raises(ValueError, match=r"retriever=\.\.\. or index="):
        CRAGWorkflow()


def test_mistakes_fail_at_construction_and_say_what_to_do(settings):
    from crag_shared import EmbeddingEvaluator, LexicalEvaluator

    judged = CRAGPostprocessor(evaluator=Settings.embed_model)  # the app's embedding model judges
    assert isinstance(judged.corrector.evaluator, EmbeddingEvaluator) and judged.config.evaluator == "embedding"
    with pytest.raises(TypeError, match="evaluator must be a spec string"):
        CRAGPostprocessor(evaluator=42)
    with pytest.raises(ValueError, match="strip_top_k\n  Input should be a valid integer"):
        CRAGPostprocessor(strip_top_k="3")
    with pytest.raises(ValueError, match=r"pass either config=CRAGConfig\(...\) or its settings as keywords \(upper\)"):
        CRAGPostprocessor(config={"lower": -0.4}, upper=0.5)
    both = CRAGPostprocessor(config={"lower": -0.4}, evaluator=LexicalEvaluator())  # an instance goes with config
    assert both.config.lower == -0.4 and both.config.evaluator == "lexical"


def test_the_llm_judge_without_an_llm_fails_at_construction():
    previous = Settings._llm
    Settings._llm = None
    try:
        with pytest.raises(ValueError, match=r"none is configured: pass llm=\.\.\. or set Settings\.llm"):
            CRAGPostprocessor(evaluator="llm")
        assert CRAGPostprocessor(evaluator="llm", llm=RuleLLM()).corrector.evaluator.mode == "batched"
    finally:
        Settings._llm = previous
