"""CRAG as an agent's tool in LlamaIndex: `FunctionAgent` and `ReActAgent` over `CRAGQueryEngineTool` read
CRAG's verdict (a few hundred bytes) and the answer or the knowledge, and the reason when CRAG abstains."""

import json
import re

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.agent.workflow import FunctionAgent, ReActAgent, ToolCallResult
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.schema import NodeWithScore, TextNode
from llama_index.core.tools import QueryEngineTool

from crag_llamaindex import CRAGQueryEngine, CRAGQueryEngineTool
from crag_llamaindex.testing import FixedRetriever, RuleLLM
from crag_shared.adapter import NO_KNOWLEDGE_ANSWER

EINSTEIN = "When was Albert Einstein born?"
CURIE = "When was Marie Curie born?"
PASSAGES = {EINSTEIN: ["Albert Einstein was born in Ulm on 14 March 1879.",
                       "Einstein developed the theory of relativity."],
            CURIE: ["The Eiffel Tower was completed in 1889 for the Exposition Universelle."]}


def engine(llm) -> CRAGQueryEngine:
    retriever = FixedRetriever({q: [NodeWithScore(node=TextNode(text=t, metadata={"file_path": f"/docs/{i}.txt"}),
                                                  score=0.5) for i, t in enumerate(texts)]
                                for q, texts in PASSAGES.items()})
    return CRAGQueryEngine(retriever, llm=llm, evaluator="default")


def calls_the_tool_then_answers(messages, **kwargs) -> ChatMessage:
    """A function-calling model's turns: call the one tool with the user's question, then answer with the
    tool's result."""
    if messages[-1].role == MessageRole.TOOL:
        return ChatMessage(role=MessageRole.ASSISTANT, content=f"Answer: {messages[-1].content}")
    question = next(m.content for m in reversed(messages) if m.role == MessageRole.USER)
    tool = kwargs["tools"][0]
    return ChatMessage(role=MessageRole.ASSISTANT, blocks=[
        ToolCallBlock(tool_call_id="call-1", tool_name=tool.metadata.name, tool_kwargs={"input": question})])


def react_turns(prompt: str) -> str:
    """A ReAct model's turns, as text: an action on the question, then the answer from the observation."""
    conversation = prompt.rsplit("## Current Conversation", 1)[-1]  # not the format the system prompt shows
    observations = re.findall(r"Observation: (.*?)(?:\n(?:Thought|Action|Answer|user|assistant)|$)", conversation,
                              re.S)
    if observations:
        return f"Thought: I can answer without using any more tools.\nAnswer: {observations[-1].strip()}"
    question = re.findall(r"user: (.*)", conversation)[-1].strip()
    return (f"Thought: I need to use a tool to help me answer the question.\nAction: search_knowledge\n"
            f"Action Input: {json.dumps({'input': question})}")


async def tool_results(agent, question: str) -> list[str]:
    handler = agent.run(user_msg=question)
    said = [event.tool_output.content async for event in handler.stream_events() if isinstance(event, ToolCallResult)]
    await handler
    return said


def agent_of(kind: str, tool):
    if kind == "function":
        return FunctionAgent(tools=[tool], llm=MockFunctionCallingLLM(response_generator=calls_the_tool_then_answers))
    return ReActAgent(tools=[tool], llm=RuleLLM(rule=react_turns), streaming=False)


@pytest.mark.parametrize("kind", ["function", "react"])
async def test_an_agent_reads_the_verdict_then_the_answer(kind):
    tool = CRAGQueryEngineTool.from_defaults(engine(RuleLLM()))
    agent = agent_of(kind, tool)
    [said] = await tool_results(agent, EINSTEIN)
    verdict, answer = said.split("\n", 1)
    assert verdict.startswith("CRAG verdict: correct, judged by lexical; best score") and len(verdict.encode()) <= 400
    assert "1879" in answer and "file_path" not in said and "crag_" not in said
    [said] = await tool_results(agent, CURIE)
    assert said.startswith("CRAG verdict: incorrect, judged by lexical; no reliable knowledge: the retrieved passages "
                           "were judged "
                           "irrelevant and there is no web knowledge (no web search configured)")
    assert said.endswith(NO_KNOWLEDGE_ANSWER) and len(said.encode()) <= 500


@pytest.mark.parametrize("kind", ["function", "react"])
async def test_a_knowledge_only_tool_hands_the_strips_and_skips_the_engines_llm(kind):
    llm = RuleLLM()
    tool = CRAGQueryEngineTool.from_defaults(engine(llm), knowledge_only=True)
    agent = agent_of(kind, tool)
    [said] = await tool_results(agent, EINSTEIN)
    lines = said.splitlines()
    assert lines[0].startswith("CRAG verdict: correct")
    assert lines[1] == "- Albert Einstein was born in Ulm on 14 March 1879."
    assert all(line.startswith("- ") for line in lines[1:]) and llm.prompts == []  # no synthesis call
    [said] = await tool_results(agent, CURIE)
    assert said.startswith("CRAG verdict: incorrect, judged by lexical; no reliable knowledge") and "Eiffel" not in said


def test_the_tool_is_a_query_engine_tool_whose_raw_output_keeps_everything():
    tool = CRAGQueryEngineTool.from_defaults(engine(RuleLLM()), name="facts")
    assert isinstance(tool, QueryEngineTool) and tool.metadata.name == "facts"
    output = tool.call(input=EINSTEIN)
    assert output.raw_output.metadata["crag"]["action"] == "correct"  # for your code, not the LLM
    plain = QueryEngineTool.from_defaults(engine(RuleLLM())).call(input=CURIE)
    assert plain.content == NO_KNOWLEDGE_ANSWER  # what a plain QueryEngineTool tells an agent: no reason
    with pytest.raises(TypeError, match="CRAGQueryEngine"):
        CRAGQueryEngineTool.from_defaults(plain.raw_output)
