"""The drop-ins say why: CRAG added to the query engine or pipeline a user already has answers, when it finds
no reliable knowledge, with that fact and the reason, and no LLM reads the passages it rejected."""

import asyncio

import pytest

pytest.importorskip("haystack")
pytest.importorskip("llama_index.core")

from haystack import Document
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import TextNode

from crag_haystack.testing import ExtractiveChatGenerator, FixedRetriever, crag_component_pipeline
from crag_llamaindex import CRAGPostprocessor
from crag_llamaindex.testing import HashingEmbedding, RuleLLM
from crag_shared.adapter import NO_KNOWLEDGE_ANSWER

NEAR_MISS = "When was Eliot born?"  # the author is there, her birth is not: below the upper threshold
ANSWERED = "When did the Golden Gate Bridge open?"
PASSAGES = ["George Eliot wrote Middlemarch, a novel of provincial life.", "Silas Marner is a novel by George Eliot.",
            "The Golden Gate Bridge opened in 1937."]
WHY = "CRAG found no reliable knowledge for this question: no retrieved strip scored at least the upper threshold"


@pytest.fixture
def index():
    return VectorStoreIndex([TextNode(text=t) for t in PASSAGES], embed_model=HashingEmbedding())


def test_the_llamaindex_query_engine_you_have_says_why_on_a_near_miss(index):
    llm = RuleLLM()
    engine = index.as_query_engine(node_postprocessors=[CRAGPostprocessor()], llm=llm, similarity_top_k=3)
    response = engine.query(NEAR_MISS)
    assert response.metadata["crag"]["action"] == "ambiguous" and response.metadata["crag"]["abstained"]
    assert "upper threshold" in response.metadata["crag"]["abstention"]["reason"]  # the verdict, from the response
    assert [n.node.node_id for n in response.source_nodes] == ["crag"]
    [prompt] = llm.prompts  # the one LLM call reads the abstention, never the near miss
    assert WHY in prompt and "do not answer from other knowledge" in prompt
    assert not any(passage in prompt for passage in PASSAGES[:2])
    assert WHY in str(response)  # the recording LLM repeats its context: what a model is told to say

    llm.prompts.clear()
    answered = engine.query(ANSWERED)
    assert "1937" in llm.prompts[0] and "CRAG found no reliable" not in llm.prompts[0]
    assert "crag" not in answered.metadata and "1937" in str(answered)  # knowledge: no note among the sources


def test_async_and_streaming_drop_ins_say_why_too(index):
    llm = RuleLLM()
    engine = index.as_query_engine(node_postprocessors=[CRAGPostprocessor()], llm=llm, similarity_top_k=3)
    response = asyncio.run(engine.aquery(NEAR_MISS))
    assert response.metadata["crag"]["abstained"] and WHY in llm.prompts[-1]
    streaming = index.as_query_engine(node_postprocessors=[CRAGPostprocessor()], llm=llm, similarity_top_k=3,
                                      streaming=True).query(NEAR_MISS)
    assert WHY in str(streaming.get_response()) and streaming.metadata["crag"]["abstained"]


def test_without_the_note_the_engine_answers_empty_and_asks_no_llm(index):
    llm = RuleLLM()
    engine = index.as_query_engine(node_postprocessors=[CRAGPostprocessor(abstention_note=False)], llm=llm,
                                   similarity_top_k=3)
    response = engine.query(NEAR_MISS)
    assert str(response) == "Empty Response" and response.metadata is None and llm.prompts == []


def test_the_haystack_drop_in_path_replies_why_without_the_generator():
    generator = ExtractiveChatGenerator()
    documents = [Document(content=t) for t in PASSAGES]
    pipeline = crag_component_pipeline(FixedRetriever({NEAR_MISS: documents, ANSWERED: documents}), generator)
    result = pipeline.run({"query": NEAR_MISS})
    reply = result["no_answer"]["replies"][0]
    assert reply.text.startswith(f"{NO_KNOWLEDGE_ANSWER} {WHY}") and generator.prompts == []
    assert result["crag"]["crag"]["abstention"]["reason"] == reply.meta["crag_abstention"]
    answered = pipeline.run({"query": ANSWERED})
    assert "1937" in answered["generator"]["replies"][0].text and "no_answer" not in answered
