"""CRAG composed with LlamaIndex's own engines: a sub-question engine keeps each sub-question's verdict, and
a multi-route router never asks the LLM to summarize abstentions into an answer."""

import json

import pytest

pytest.importorskip("llama_index.core")

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


def tools(llm, passages=PASSAGES):
    retriever = FixedRetriever({q: [NodeWithScore(node=TextNode(text=t), score=0.5) for t in texts]
                                for q, texts in passages.items()})
    return [QueryEngineTool(query_engine=CRAGQueryEngine(retriever, llm=llm),
                            metadata=ToolMetadata(name=name, description=f"facts about {name}"))
            for name in ("einstein", "curie")]


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_a_sub_question_engine_keeps_each_crag_verdict(asynchronous):
    llm = RuleLLM()
    engine = CRAGVerdicts(SubQuestionQueryEngine.from_defaults(
        query_engine_tools=tools(llm), question_gen=FixedQuestions(), llm=llm, use_async=False,
        response_synthesizer=AbstentionAware(llm=llm)))
    question = "When were Einstein and Curie born?"
    response = await engine.aquery(question) if asynchronous else engine.query(question)
    verdicts = response.metadata["crag"]
    assert [v["query"] for v in verdicts] == [EINSTEIN, CURIE]
    assert [v["action"] for v in verdicts] == ["correct", "incorrect"] and verdicts[1]["abstained"]
    assert "Ulm" in "".join(n.node.get_content() for n in response.source_nodes)


def test_a_router_does_not_summarize_abstentions_into_an_answer():
    def rule(prompt):
        if "choice" in prompt.lower() or "select" in prompt.lower():  # the selector picks both routes
            return json.dumps([{"choice": 1, "reason": "a"}, {"choice": 2, "reason": "b"}])
        return "[offline stand-in LLM] summary"

    llm = RuleLLM(rule)
    routed = tools(llm, passages={})  # both routes abstain: they retrieve nothing for the question
    router = CRAGVerdicts(RouterQueryEngine(selector=LLMMultiSelector.from_defaults(llm=llm),
                                            query_engine_tools=routed, llm=llm, summarizer=AbstentionAware(llm=llm)))
    response = router.query("When was Ada Lovelace born?")
    assert str(response) == NO_KNOWLEDGE_ANSWER
    assert [v["abstained"] for v in response.metadata["crag"]] == [True, True]
    assert not any("summary" in p.lower() and "ada lovelace" in p.lower() and "context" in p.lower()
                   for p in llm.prompts[1:])  # only the selector's prompt reached the LLM
    assert len(llm.prompts) == 1
