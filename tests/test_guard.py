"""`ambiguous="guard"`: an Ambiguous question's strips below the upper threshold reach the generator marked
unverified, with the instruction to answer only from a passage that states the answer; Correct strips are
never marked, and the default still abstains. Shown with recording stand-ins for the LLM and the generator."""

import asyncio

import pytest

pytest.importorskip("haystack")
pytest.importorskip("llama_index.core")

from haystack import Document, Pipeline, component
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.document_stores.in_memory import InMemoryDocumentStore
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from crag_haystack import CRAG, CorrectiveRetriever, build_crag_pipeline, knowledge_text
from crag_haystack.testing import ExtractiveChatGenerator
from crag_haystack.testing import FixedRetriever as HaystackRetriever
from crag_llamaindex import CRAGPostprocessor, CRAGQueryEngine, CRAGQueryEngineTool, CRAGWorkflow
from crag_llamaindex.testing import FixedRetriever, RuleLLM
from crag_shared import Corrector, CRAGConfig, FunctionSearch
from crag_shared.adapter import NO_KNOWLEDGE_ANSWER, UNVERIFIED_END, UNVERIFIED_NOTE, unverified_mark

# Ambiguous with the lexical judge: both passages are about the novel but name no author (-0.12 each, "holds no
# person"), so neither scores the upper threshold and neither falls below the lower
NEAR = "Who wrote Middlemarch?"
CORRECT = "When did the Golden Gate Bridge open?"
PASSAGES = {NEAR: ["Middlemarch is a novel set in a fictional town.",
                   "Middlemarch was published in eight instalments in 1871 and 1872."],
            CORRECT: ["The Golden Gate Bridge opened in 1937."]}


def nodes_by_question():
    return FixedRetriever({q: [NodeWithScore(node=TextNode(text=t), score=0.5) for t in texts]
                           for q, texts in PASSAGES.items()})


def documents_by_question():
    return HaystackRetriever({q: [Document(content=t) for t in texts] for q, texts in PASSAGES.items()})


def test_the_core_marks_only_the_strips_it_could_not_verify():
    near = Corrector(ambiguous="guard").correct(NEAR, PASSAGES[NEAR])
    assert near.action.value == "ambiguous" and near.knowledge and all(s.unverified for s in near.knowledge)
    assert near.knowledge_text.count(unverified_mark()) == len(near.knowledge)
    assert [step["unverified"] for step in near.trace.to_dict()["steps"] if step["step"] == "ambiguous_strips"] == [2]
    correct = Corrector(ambiguous="guard").correct(CORRECT, PASSAGES[CORRECT])
    assert correct.action.value == "correct" and correct.knowledge and not any(s.unverified for s in correct.knowledge)
    assert "unverified" not in correct.knowledge_text
    default = Corrector().correct(NEAR, PASSAGES[NEAR])
    assert default.abstained and "upper threshold" in default.abstention.reason


def test_a_setting_that_is_neither_drop_nor_guard_fails_where_it_is_given():
    with pytest.raises(ValueError, match="ambiguous"):
        CRAGConfig(ambiguous="maybe")
    with pytest.raises(ValueError, match="ambiguous"):
        Corrector(ambiguous="maybe")


def test_the_llamaindex_engine_hands_the_llm_the_mark_and_the_instruction():
    llm = RuleLLM()
    engine = CRAGQueryEngine(nodes_by_question(), llm=llm, ambiguous="guard", evaluator="default")
    response = engine.query(NEAR)
    [prompt] = llm.prompts
    assert f"unverified: {UNVERIFIED_NOTE}" in prompt and PASSAGES[NEAR][0] in prompt
    assert response.metadata["crag"]["strips"][0]["unverified"]
    llm.prompts.clear()
    engine.query(CORRECT)
    assert "1937" in llm.prompts[0] and "unverified" not in llm.prompts[0]  # Correct strips are not marked

    default_llm = RuleLLM()
    default = CRAGQueryEngine(nodes_by_question(), llm=default_llm, evaluator="default").query(NEAR)
    assert str(default) == NO_KNOWLEDGE_ANSWER and default_llm.prompts == []  # the default still abstains


def test_the_workflow_and_the_agent_tool_hand_on_the_mark():
    llm = RuleLLM()
    workflow = CRAGWorkflow(nodes_by_question(), llm=llm, ambiguous="guard", evaluator="default")

    async def run():
        return await workflow.run(query=NEAR)

    asyncio.run(run())
    assert f"unverified: {UNVERIFIED_NOTE}" in llm.prompts[-1]

    tool = CRAGQueryEngineTool.from_defaults(CRAGQueryEngine(nodes_by_question(), llm=RuleLLM(), ambiguous="guard",
                                                             evaluator="default"),
                                             knowledge_only=True)
    said = tool.call(NEAR).content
    first, *strips = said.splitlines()
    assert "2 strips unverified" in first and strips and all(s.startswith(f"- {unverified_mark()} ") for s in strips)
    assert unverified_mark() not in tool.call(CORRECT).content


def test_the_llamaindex_settings_keep_guard_through_serialization():
    postprocessor = CRAGPostprocessor(ambiguous="guard")
    again = CRAGPostprocessor.from_dict(postprocessor.to_dict())
    assert again.config.ambiguous == "guard"
    nodes = [NodeWithScore(node=TextNode(text=t)) for t in PASSAGES[NEAR]]
    assert all(n.node.metadata["unverified"] == UNVERIFIED_NOTE
               for n in again.postprocess_nodes(nodes, QueryBundle(NEAR)))


def test_the_haystack_pipeline_hands_the_generator_the_mark_and_the_instruction():
    generator = ExtractiveChatGenerator()
    pipeline = build_crag_pipeline(documents_by_question(), generator, ambiguous="guard", evaluator="default")
    ran = pipeline.run({"query": NEAR}, include_outputs_from={"gate"})
    [prompt] = generator.prompts
    assert f"- {unverified_mark()}\n{PASSAGES[NEAR][0]}\n{UNVERIFIED_END}" in prompt
    assert all(d.meta["unverified"] == UNVERIFIED_NOTE for d in ran["gate"]["documents"])
    pipeline.run({"query": CORRECT})
    assert "1937" in generator.prompts[-1] and "unverified" not in generator.prompts[-1]

    quiet = ExtractiveChatGenerator()
    default = build_crag_pipeline(documents_by_question(), quiet, evaluator="default").run({"query": NEAR})
    assert "no_answer" in default and quiet.prompts == []  # the default still abstains


def test_the_haystack_pipeline_keeps_guard_in_yaml():
    store = InMemoryDocumentStore()
    store.write_documents([Document(content=t) for t in PASSAGES[NEAR]])
    pipeline = build_crag_pipeline(InMemoryBM25Retriever(store), ExtractiveChatGenerator(), ambiguous="guard",
                                   evaluator="default")
    yaml = pipeline.dumps()
    assert "ambiguous: guard" in yaml
    router = Pipeline.loads(yaml).get_component("retrieval_router")
    assert router.ambiguous == "guard" and router._corrector.ambiguous == "guard"
    loaded = Pipeline.loads(yaml)
    loaded.run({"query": NEAR})
    assert unverified_mark() in loaded.get_component("generator").prompts[0]
    component = CRAG.from_dict(CRAG(ambiguous="guard", evaluator="default").to_dict())
    assert component.config.ambiguous == "guard"


def test_the_haystack_tool_text_marks_the_unverified_strips():
    search = CorrectiveRetriever(documents_by_question(), crag=CRAG(ambiguous="guard"))
    first, *strips = knowledge_text(search.run(query=NEAR)).splitlines()
    assert "2 strips unverified" in first and all(s.startswith(f"- {unverified_mark()} ") for s in strips)
    correct = knowledge_text(search.run(query=CORRECT))
    assert "1937" in correct and "unverified" not in correct
    assert knowledge_text(CorrectiveRetriever(documents_by_question()).run(query=NEAR)).startswith(
        "CRAG verdict: ambiguous, judged by lexical; no reliable knowledge")


@component
class OffTopicWeb:
    """A web search component whose one page says nothing about the question: pages, but no web knowledge."""

    @component.output_types(documents=list[Document], issues=list[str], links=list[str])
    def run(self, query: str):
        return {"documents": [Document(content=OFF_TOPIC, meta={"title": "Pasta", "url": "https://pasta.example",
                                                                "crag_origin": "web"})],
                "issues": [], "links": ["https://pasta.example"]}


OFF_TOPIC = "Boil the pasta for ten minutes in salted water."


def test_pages_whose_strips_all_fail_are_no_web_knowledge_in_the_core_and_the_pipeline():
    web = FunctionSearch(lambda query: [{"link": "https://pasta.example", "title": "Pasta", "snippet": OFF_TOPIC}],
                         fetch_pages=False)
    core = Corrector(web_search=web).correct(NEAR, PASSAGES[NEAR])
    assert core.web is not None and core.web.passages and not core.external
    assert core.abstained and "upper threshold" in core.abstention.reason  # the floor held without web knowledge
    generator = ExtractiveChatGenerator()
    ran = build_crag_pipeline(documents_by_question(), generator, web_search=OffTopicWeb(), evaluator="default").run(
        {"query": NEAR}, include_outputs_from={"web_refiner"})
    assert ran["web_refiner"]["documents"] == [] and "no_answer" in ran and generator.prompts == []
    guarded = Corrector(web_search=web, ambiguous="guard").correct(NEAR, PASSAGES[NEAR])
    assert guarded.knowledge and all(s.unverified for s in guarded.knowledge)
