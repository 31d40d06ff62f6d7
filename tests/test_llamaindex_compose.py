"""CRAG composed with LlamaIndex's own engines: a sub-question engine keeps each sub-question's verdict, and
a multi-route router never asks the LLM to summarize abstentions into an answer."""

import asyncio
import contextvars
import json
import logging
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.callbacks import CallbackManager
from llama_index.core.query_engine import RouterQueryEngine, SubQuestionQueryEngine
from llama_index.core.question_gen.types import BaseQuestionGenerator, SubQuestion
from llama_index.core.schema import NodeWithScore, TextNode
from llama_index.core.selectors import LLMMultiSelector
from llama_index.core.tools import QueryEngineTool, ToolMetadata

from crag_llamaindex import AbstentionAware, CRAGQueryEngine, CRAGVerdicts
from crag_llamaindex.testing import FixedRetriever, RuleLLM
from crag_shared.adapter import NO_KNOWLEDGE_ANSWER

EINSTEIN = "When was Albert Einstein born?"
CURIE = "When was Marie Curie born?"
PASSAGES = {EINSTEIN: ["Albert Einstein was born in Ulm on 14 March 1879."],
            CURIE: ["The Eiffel Tower was completed in 1889 for the Exposition Universelle."]}


class FixedQuestions(BaseQuestionGenerator):
    """Splits any question into the two sub-questions, one per tool (as an LLM question generator would)."""

    def _get_prompts(self):
        return {}

    def _update_prompts(self, prompts):
        pass

    def generate(self, tools, query):
        return [SubQuestion(sub_question=EINSTEIN, tool_name="einstein"),
                SubQuestion(sub_question=CURIE, tool_name="curie")]

    async def agenerate(self, tools, query):
        return self.generate(tools, query)


class Pooled(BaseQueryEngine):
    """An application's engine that answers through another engine run on the application's own thread pool
    (sync: `submit`; async: `run_in_executor`); neither carries the caller's context into the pool's threads.
    `after` runs in the pool's thread once the engine answered; `copy_context` runs the engine in a copy of the
    caller's context."""

    def __init__(self, engine, pool, after=None, copy_context=False):
        self.engine, self.pool, self.after, self.copy_context = engine, pool, after, copy_context
        super().__init__(callback_manager=CallbackManager())

    def _get_prompt_modules(self):
        return {}

    def _run(self, query_bundle):
        response = self.engine.query(query_bundle)
        if self.after:
            self.after()
        return response

    def _query(self, query_bundle):
        run = contextvars.copy_context().run if self.copy_context else (lambda f, *a: f(*a))
        return self.pool.submit(run, self._run, query_bundle).result()

    async def _aquery(self, query_bundle):
        return await asyncio.get_running_loop().run_in_executor(self.pool, self._run, query_bundle)


def tools(llm, passages=PASSAGES, wrap=lambda engine: engine):
    retriever = FixedRetriever({q: [NodeWithScore(node=TextNode(text=t), score=0.5) for t in texts]
                                for q, texts in passages.items()})
    return [QueryEngineTool(query_engine=wrap(CRAGQueryEngine(retriever, llm=llm)),
                            metadata=ToolMetadata(name=name, description=f"facts about {name}"))
            for name in ("einstein", "curie")]


def both_routes(prompt):
    if "choice" in prompt.lower() or "select" in prompt.lower():  # the selector picks both routes
        return json.dumps([{"choice": 1, "reason": "a"}, {"choice": 2, "reason": "b"}])
    return "[offline stand-in LLM] summary"


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_a_sub_question_engine_keeps_each_crag_verdict(asynchronous):
    llm = RuleLLM()
    engine = CRAGVerdicts(SubQuestionQueryEngine.from_defaults(
        query_engine_tools=tools(llm), question_gen=FixedQuestions(), llm=llm, use_async=False,
        response_synthesizer=AbstentionAware(llm=llm)))
    question = "When were Einstein and Curie born?"
    response = await engine.aquery(question) if asynchronous else engine.query(question)
    verdicts = {v["query"]: v for v in response.metadata["crag"]}  # in the order the sub-questions finished
    assert len(response.metadata["crag"]) == 2 and set(verdicts) == {EINSTEIN, CURIE}
    assert verdicts[EINSTEIN]["action"] == "correct" and verdicts[EINSTEIN]["judge"] == "llm"
    assert verdicts[CURIE]["action"] == "incorrect" and verdicts[CURIE]["abstained"]
    assert "Ulm" in "".join(n.node.get_content() for n in response.source_nodes)


def test_a_router_does_not_summarize_abstentions_into_an_answer():
    llm = RuleLLM(both_routes)
    routed = tools(llm, passages={})  # both routes abstain: they retrieve nothing for the question
    router = CRAGVerdicts(RouterQueryEngine(selector=LLMMultiSelector.from_defaults(llm=llm),
                                            query_engine_tools=routed, llm=llm, summarizer=AbstentionAware(llm=llm)))
    response = router.query("When was Ada Lovelace born?")
    assert str(response) == NO_KNOWLEDGE_ANSWER
    assert [v["abstained"] for v in response.metadata["crag"]] == [True, True]
    assert not any("summary" in p.lower() and "ada lovelace" in p.lower() and "context" in p.lower()
                   for p in llm.prompts[1:])  # only the selector's prompt reached the LLM
    assert len(llm.prompts) == 1


# -- sub-engines on the application's own threads: their context is empty, their verdicts still arrive --
@pytest.mark.parametrize("asynchronous", [False, True])
async def test_verdicts_of_sub_engines_run_on_the_applications_thread_pool_arrive(asynchronous):
    llm = RuleLLM()
    with ThreadPoolExecutor(max_workers=2) as pool:
        engine = CRAGVerdicts(SubQuestionQueryEngine.from_defaults(
            query_engine_tools=tools(llm, wrap=lambda e: Pooled(e, pool)), question_gen=FixedQuestions(), llm=llm,
            use_async=False, response_synthesizer=AbstentionAware(llm=llm)))
        question = "When were Einstein and Curie born?"
        response = await engine.aquery(question) if asynchronous else engine.query(question)
    verdicts = response.metadata["crag"]
    assert sorted((v["query"], v["action"]) for v in verdicts) == [(EINSTEIN, "correct"), (CURIE, "incorrect")]


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_a_routers_verdicts_arrive_from_the_applications_thread_pool(asynchronous):
    llm = RuleLLM(both_routes)
    with ThreadPoolExecutor(max_workers=4) as pool:
        router = CRAGVerdicts(RouterQueryEngine(
            selector=LLMMultiSelector.from_defaults(llm=llm), llm=llm, summarizer=AbstentionAware(llm=llm),
            query_engine_tools=tools(llm, passages={}, wrap=lambda e: Pooled(e, pool))))
        response = await router.aquery("When was Ada Lovelace born?") if asynchronous else router.query(
            "When was Ada Lovelace born?")
    assert [v["abstained"] for v in response.metadata["crag"]] == [True, True]
    assert str(response) == NO_KNOWLEDGE_ANSWER


@pytest.mark.parametrize("copy_context", [False, True])
def test_concurrent_queries_never_take_each_others_verdicts(copy_context, caplog):
    """Two CRAGVerdicts queries over the same engines at once, sub-engines on a context-free pool: which query
    asked cannot be known, so no verdict is attached to the wrong one, and each is logged. With the
    context copied into the pool, each query gets exactly its own."""
    llm = RuleLLM()
    both_open = threading.Barrier(2, timeout=30)  # each verdict is given while both outer queries are open
    first_route = RuleLLM(lambda prompt: json.dumps([{"choice": 1, "reason": "a"}]))
    with ThreadPoolExecutor(max_workers=2) as pool, ThreadPoolExecutor(max_workers=2) as callers:
        engine = CRAGVerdicts(RouterQueryEngine(
            selector=LLMMultiSelector.from_defaults(llm=first_route), llm=llm, summarizer=AbstentionAware(llm=llm),
            query_engine_tools=tools(llm, wrap=lambda e: Pooled(e, pool, after=both_open.wait,
                                                                copy_context=copy_context))))
        with caplog.at_level(logging.WARNING, logger="crag"):
            responses = list(callers.map(engine.query, [EINSTEIN, CURIE]))
    verdicts = [r.metadata["crag"] for r in responses]
    if copy_context:
        assert [[v["query"] for v in row] for row in verdicts] == [[EINSTEIN], [CURIE]]
        assert not caplog.records
    else:
        assert verdicts == [[], []]
        assert len([r for r in caplog.records if "not attached" in r.getMessage()]) == 2


def test_nested_verdict_queries_both_get_a_pooled_engines_verdict():
    llm = RuleLLM()
    with ThreadPoolExecutor(max_workers=2) as pool:
        inner = CRAGVerdicts(Pooled(tools(llm)[0].query_engine, pool))
        outer = CRAGVerdicts(Pooled(inner, pool))  # the inner query itself starts on the pool, context-free
        response = outer.query(EINSTEIN)
    assert [v["query"] for v in response.metadata["crag"]] == [EINSTEIN]
