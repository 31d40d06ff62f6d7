"""CRAGPostprocessor as LlamaIndex users expect a reranker to behave: top_n and sorted output, the retrieval
score kept, live settings, lossless serialization, the standard rerank events, strips that keep node
features, and an embedding judge that embeds the query once and never blocks the event loop."""

import asyncio
import copy
import json
import pickle
import time
from dataclasses import replace

import pytest
from llama_index.core import Settings, VectorStoreIndex
from llama_index.core.callbacks import CallbackManager, CBEventType, LlamaDebugHandler
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.events.rerank import ReRankEndEvent, ReRankStartEvent
from llama_index.core.instrumentation.span_handlers import SimpleSpanHandler
from llama_index.core.postprocessor import SimilarityPostprocessor
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import Document, ImageNode, NodeWithScore, QueryBundle, TextNode

from crag_llamaindex import CRAGPostprocessor
from crag_llamaindex.testing import HashingEmbedding, RuleLLM, offline_settings, recording_events
from crag_shared import CRAGConfig, EmbeddingEvaluator, LexicalEvaluator
from crag_shared.demo import QUESTIONS, build_corrector, corpus

CORRECT_Q, AMBIGUOUS_Q, INCORRECT_Q = QUESTIONS


@pytest.fixture
def settings():
    with offline_settings():
        yield


def demo_nodes(scores=None):
    passages = corpus()
    return [NodeWithScore(node=TextNode(text=p.text, id_=p.id, metadata={"title": p.title}),
                          score=(scores or [0.9 - i * 0.05 for i in range(len(passages))])[i])
            for i, p in enumerate(passages)]


# -- item 4: reranker semantics ---------------------------------------------------------------------------
def test_output_is_sorted_by_crag_score_cut_to_top_n_with_the_retrieval_score_kept():
    nodes = demo_nodes()
    web = build_corrector().web_search
    everything, result = CRAGPostprocessor(web_search=web, strip_top_k=5).correct(nodes, QueryBundle(AMBIGUOUS_Q))
    scores = [n.score for n in everything]
    assert len(everything) >= 3 and scores == sorted(scores, reverse=True)
    assert everything[0].score == max(s.score for s in result.knowledge)

    pp = CRAGPostprocessor(web_search=web, strip_top_k=5, top_n=2, keep_retrieval_score=True)
    best = pp.postprocess_nodes(nodes, query_str=AMBIGUOUS_Q)
    assert [n.score for n in best] == scores[:2]
    by_id = {n.node.node_id: n.score for n in nodes}
    for item in best:
        meta = item.node.metadata
        if meta["crag_origin"] == "internal":
            assert meta["retrieval_score"] == by_id[meta["crag_source_id"]]
            assert "retrieval_score" not in item.node.excluded_llm_metadata_keys
    assert all("retrieval_score" not in n.node.metadata for n in nodes)  # the user's nodes are not changed
    with pytest.raises(ValueError, match="top_n"):
        CRAGPostprocessor(top_n=0)


def test_original_nodes_keep_their_retrieval_score_in_a_copy():
    nodes = demo_nodes()
    kept = CRAGPostprocessor(return_strips=False, keep_retrieval_score=True).postprocess_nodes(
        nodes, query_str=CORRECT_Q)
    assert kept and all(n.node.metadata["retrieval_score"] in {m.score for m in nodes} for n in kept)
    assert all("retrieval_score" not in n.node.metadata for n in nodes)


def test_a_similarity_cutoff_after_crag_reads_crag_scores():
    nodes = demo_nodes()
    crag = CRAGPostprocessor(web_search=build_corrector().web_search)
    out = crag.postprocess_nodes(nodes, query_str=AMBIGUOUS_Q)
    cut = SimilarityPostprocessor(similarity_cutoff=0.0).postprocess_nodes(out, query_str=AMBIGUOUS_Q)
    assert cut == [n for n in out if n.score >= 0.0]  # the best come first, so a cutoff keeps a prefix
    assert cut == out[:len(cut)]


# -- item 1: live settings -------------------------------------------------------------------------------
def test_settings_are_live_and_the_config_refuses_assignment_loudly():
    nodes, bundle = demo_nodes(), QueryBundle(CORRECT_Q)
    pp = CRAGPostprocessor()
    assert pp.correct(nodes, bundle)[1].action.value == "correct"
    with pytest.raises(AttributeError, match=r"cannot assign to field 'upper'"):
        pp.config.upper = 0.99
    pp.config = replace(pp.config, upper=1.0, lower=0.99)
    _, result = pp.correct(nodes, bundle)
    assert result.thresholds == (1.0, 0.99) and result.action.value == "incorrect"
    copied = pp.model_copy(update={"config": CRAGConfig(upper=0.1, lower=-0.9)})
    assert copied.correct(nodes, bundle)[1].thresholds == (0.1, -0.9)
    assert pp.correct(nodes, bundle)[1].thresholds == (1.0, 0.99)  # the original keeps its own
    as_dict = pp.model_copy(update={"config": {"upper": 0.2, "lower": -0.8}})
    assert as_dict.correct(nodes, bundle)[1].thresholds == (0.2, -0.8)
    assert isinstance(as_dict.config, CRAGConfig)


def test_a_replaced_config_keeps_the_web_search_and_prompts(settings):
    llm = RuleLLM(rule=lambda prompt: "query: sydney bridge")
    from llama_index.core.prompts import PromptTemplate

    pp = CRAGPostprocessor(llm=llm, web_search=build_corrector().web_search)
    pp.update_prompts({"rewrite_prompt": PromptTemplate("Words: {query_str}\nquery:")})
    pp.config = replace(pp.config, web_top_k=2)
    _, result = pp.correct([], QueryBundle(INCORRECT_Q))
    assert llm.prompts[-1] == f"Words: {INCORRECT_Q}\nquery:" and result.web is not None


# -- item 2: serialization --------------------------------------------------------------------------------
def round_trips(pp):
    data = pp.to_dict()
    yield "to_dict/from_dict", CRAGPostprocessor.from_dict(data)
    yield "json", CRAGPostprocessor.from_dict(json.loads(json.dumps(data)))
    yield "model_dump/model_validate", CRAGPostprocessor.model_validate(pp.model_dump())
    yield "model_dump_json", CRAGPostprocessor.model_validate_json(pp.model_dump_json())
    yield "pickle", pickle.loads(pickle.dumps(pp))
    yield "deepcopy", copy.deepcopy(pp)


def test_every_configuration_round_trips_evaluator_instances_included():
    pp = CRAGPostprocessor(evaluator=LexicalEvaluator(sentence_weight=0.2, thresholds=(0.3, -0.4)), top_n=3,
                           keep_retrieval_score=True, strip_top_k=2)
    assert pp.config.evaluator == "lexical"
    assert pp.config.evaluator_options == {"sentence_weight": 0.2, "thresholds": [0.3, -0.4]}
    expected = pp.correct(demo_nodes(), QueryBundle(AMBIGUOUS_Q))
    for how, copy_ in round_trips(pp):
        evaluator = copy_.corrector.evaluator
        assert isinstance(evaluator, LexicalEvaluator) and evaluator.sentence_weight == 0.2, how
        assert evaluator.thresholds == (0.3, -0.4) and copy_.top_n == 3 and copy_.keep_retrieval_score, how
        nodes, result = copy_.correct(demo_nodes(), QueryBundle(AMBIGUOUS_Q))
        assert result.scores == expected[1].scores and [n.score for n in nodes] == [n.score for n in expected[0]]


def test_the_app_embedding_model_judge_pickles_and_deep_copies(settings):
    pp = CRAGPostprocessor(evaluator="embedding", top_n=2)
    expected = pp.correct(demo_nodes(), QueryBundle(CORRECT_Q))[1].scores
    for how, copy_ in round_trips(pp):
        assert isinstance(copy_.corrector.evaluator, EmbeddingEvaluator), how
        assert copy_.correct(demo_nodes(), QueryBundle(CORRECT_Q))[1].scores == pytest.approx(expected), how
    tuned = CRAGPostprocessor(evaluator=Settings.embed_model, config=CRAGConfig(upper=0.4))
    assert tuned.config.evaluator == "embedding" and pickle.loads(pickle.dumps(tuned)).config.upper == 0.4


class Mine(LexicalEvaluator):
    """An evaluator class of the app's own."""


def test_what_cannot_be_saved_fails_loudly_naming_it():
    pp = CRAGPostprocessor(evaluator=Mine())
    assert pickle.loads(pickle.dumps(pp)).corrector.evaluator.__class__.__name__ == "Mine"  # the instance travels
    saved = pp.to_dict()
    assert saved["config"]["evaluator"].endswith(".Mine")
    with pytest.raises(ValueError, match=r"Mine.*pass the instance"):
        CRAGPostprocessor.from_dict(saved)


# -- item 3: the embedding judge ---------------------------------------------------------------------------
class CountingEmbedding(HashingEmbedding):
    """Counts query embeddings; its text embeddings take a while, as a real model's do."""

    queries: int = 0
    delay: float = 0.0

    def _get_query_embedding(self, query):
        self.queries += 1
        return super()._get_query_embedding(query)

    async def _aget_query_embedding(self, query):
        return self._get_query_embedding(query)

    def _get_text_embeddings(self, texts):
        time.sleep(self.delay)
        return [self._get_text_embedding(t) for t in texts]


def test_the_query_is_embedded_once_per_query_in_total():
    model = CountingEmbedding()
    index = VectorStoreIndex.from_documents([Document(text=p.text, id_=p.id) for p in corpus()], embed_model=model)
    crag = CRAGPostprocessor(evaluator=model, web_search=build_corrector().web_search)
    engine = RetrieverQueryEngine.from_args(index.as_retriever(similarity_top_k=5), llm=RuleLLM(),
                                            node_postprocessors=[crag])
    crag.corrector.evaluator.scale()  # found once, on crag's reference set
    for question in QUESTIONS:
        before = model.queries
        engine.query(question)
        assert model.queries - before == 1, question  # the retriever's; the judge reuses the bundle's
    before = model.queries
    crag.postprocess_nodes(demo_nodes(), query_str="a question no retriever embedded")
    assert model.queries - before == 1  # passages, then strips: the query once


async def test_the_embedding_judge_never_blocks_the_event_loop():
    model = CountingEmbedding(delay=0.3)
    crag = CRAGPostprocessor(evaluator=model)
    gaps, running = [], True

    async def ticker():
        last = time.perf_counter()
        while running:
            await asyncio.sleep(0.01)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    tick = asyncio.create_task(ticker())
    await crag.apostprocess_nodes(demo_nodes(), query_str=CORRECT_Q)
    running = False
    await tick
    assert max(gaps) < 0.2  # each 0.3 s embedding call ran in a worker thread


# -- item 8: standard events and spans ---------------------------------------------------------------------
@pytest.fixture
def recorded():
    root = get_dispatcher()
    spans = SimpleSpanHandler()
    root.add_span_handler(spans)
    with recording_events() as recorder:
        yield recorder, spans
    root.span_handlers.remove(spans)


async def test_rerank_events_callback_event_and_spans_sync_and_async(recorded):
    recorder, spans = recorded
    debug = LlamaDebugHandler()
    crag = CRAGPostprocessor(callback_manager=CallbackManager([debug]), top_n=2,
                             web_search=build_corrector().web_search, evaluator="default")
    out = crag.postprocess_nodes(demo_nodes(), query_str=AMBIGUOUS_Q)
    aout = await crag.apostprocess_nodes(demo_nodes(), query_str=AMBIGUOUS_Q)
    pairs = debug.get_event_pairs(CBEventType.RERANKING)
    assert len(pairs) == 2 and pairs[0][0].payload["model_name"] == "crag:lexical"
    assert [n.score for n in pairs[0][1].payload["nodes"]] == [n.score for n in out]
    starts = [e for e in recorder.events if isinstance(e, ReRankStartEvent)]
    ends = [e for e in recorder.events if isinstance(e, ReRankEndEvent)]
    assert len(starts) == len(ends) == 2 and starts[0].top_n == 2 and starts[0].model_name == "crag:lexical"
    assert [n.score for n in ends[1].nodes] == [n.score for n in aout]
    assert {type(e).__name__ for e in recorder.events} >= {"CRAGActionEvent", "CRAGWebSearchEvent"}
    names = [span.id_.split("-")[0] for span in spans.completed_spans]
    assert "CRAGPostprocessor._postprocess_nodes" in names and "CRAGPostprocessor._apostprocess_nodes" in names


# -- item 9: strips keep node features ---------------------------------------------------------------------
def test_strips_keep_offsets_text_template_and_a_size_bound_and_images_pass_through():
    document = "Intro line. " * 5 + corpus()[0].text
    offset = 60
    chunk = TextNode(text=document[offset:], id_="chunk", start_char_idx=offset, end_char_idx=len(document),
                     text_template="<<{metadata_str}>> {content}", metadata={"title": "Sydney"})
    run_on = TextNode(text=" ".join(["bridge"] * 3000), id_="run-on")
    image = ImageNode(image="aGVsbG8=", id_="picture")
    nodes = [NodeWithScore(node=chunk, score=0.8), NodeWithScore(node=run_on, score=0.5),
             NodeWithScore(node=image, score=0.4)]
    crag = CRAGPostprocessor(upper=-1.0, lower=-1.0, strip_threshold=-1.0, strip_top_k=50, max_strip_chars=300)
    out, result = crag.correct(nodes, QueryBundle(CORRECT_Q))
    strips = [n for n in out if n.node.metadata.get("crag_source_id") == "chunk"]
    assert strips
    for item in strips:
        node = item.node
        assert document[node.start_char_idx:node.end_char_idx] == node.text
        assert node.text_template == chunk.text_template and node.get_content(metadata_mode="llm").startswith("<<")
    bounded = [n for n in out if n.node.metadata.get("crag_source_id") == "run-on"]
    assert bounded and all(len(n.node.text) <= 300 for n in bounded)
    assert out[-1].node is image and out[-1].score == 0.4  # untouched, after the knowledge
    assert any(type(step).__name__ == "SkippedPassage" and step.id == "picture" for step in result.trace.steps)


# -- item 7: the wrappers compose --------------------------------------------------------------------------
async def test_query_engine_and_workflow_take_node_postprocessors_and_concurrency(settings):
    from llama_index.core.postprocessor import LongContextReorder

    from crag_llamaindex import CRAGQueryEngine, CRAGWorkflow
    from crag_llamaindex.testing import FixedRetriever

    nodes = demo_nodes()
    retriever = FixedRetriever({CORRECT_Q: nodes})
    cut = SimilarityPostprocessor(similarity_cutoff=0.8)  # keeps the retriever's top 3 (0.9, 0.85, 0.8)
    engine = CRAGQueryEngine(retriever, node_postprocessors=[cut])
    response = await engine.aquery(CORRECT_Q)
    assert engine.query(CORRECT_Q).metadata["crag"]["scores"] == response.metadata["crag"]["scores"]
    assert len(response.metadata["crag"]["scores"]) == 3  # CRAG judged what the user's postprocessor kept
    assert "node_postprocessor_0" not in engine.get_prompts()  # a postprocessor without prompts adds none
    with pytest.raises(TypeError, match="node_postprocessors"):
        CRAGQueryEngine(retriever, node_postprocessors=["reorder"])
    workflow = CRAGWorkflow(retriever, node_postprocessors=[cut, LongContextReorder()], num_concurrent_runs=2)
    answered = await workflow.run(query=CORRECT_Q)  # the same nodes, reordered by LongContextReorder
    assert sorted(answered.metadata["crag"]["scores"]) == sorted(response.metadata["crag"]["scores"])


def test_web_search_retriever_reports_a_search_not_a_judgment(caplog):
    from crag_llamaindex import WebSearchRetriever

    with recording_events() as recorder:
        nodes = WebSearchRetriever(build_corrector().web_search, on_web_failure="keep").retrieve(INCORRECT_Q)
        assert nodes and all(n.node.metadata["crag_origin"] == "web" and n.node.metadata["url"] for n in nodes)
        names = [type(e).__name__ for e in recorder.events]
        assert "CRAGWebSearchEvent" in names and "CRAGActionEvent" not in names and "CRAGFallbackEvent" not in names
        from crag_shared.web.memory import InMemorySearch

        recorder.events.clear()
        assert WebSearchRetriever(InMemorySearch([])).retrieve(INCORRECT_Q) == []
        fallbacks = [e for e in recorder.events if type(e).__name__ == "CRAGFallbackEvent"]
        assert len(fallbacks) == 1 and "internal" not in fallbacks[0].applied
        assert any(r.name == "crag" and r.levelname == "WARNING" for r in caplog.records)
