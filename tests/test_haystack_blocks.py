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
    said = knowledge_text({"abstention": "no web search configured", "action": "incorrect"})
    assert said.startswith("CRAG verdict: incorrect; no reliable knowledge: no web search configured.")
    web = Document(content="Ulaanbaatar is\nthe capital.",
                   meta={"web_source": "https://x.org (untrusted web page)", "crag_origin": "web", "crag_score": 0.9})
    said = knowledge_text({"documents": [web], "action": "incorrect", "scores": [-0.9]})
    assert said.splitlines()[1] == "- Ulaanbaatar is the capital. [from https://x.org (untrusted web page)]"


def test_the_agent_example_answers_from_crag_and_hears_no_knowledge(capsys):
    spec = importlib.util.spec_from_file_location("haystack_agent", ROOT / "examples" / "haystack_agent.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    example.main()
    designed, mongolia = capsys.readouterr().out.strip().splitlines()
    assert "Jørn Utzon" in designed and "CRAG verdict: correct" in designed
    assert "no reliable knowledge" in mongolia and "no web search configured" in mongolia


def _tool_result(agent_result) -> str:
    """What the agent's LLM read back from the tool (the tool message of its one call)."""
    results = [m.tool_call_result for m in agent_result["messages"] if m.tool_call_result is not None]
    assert len(results) == 1
    return results[0].result


def _verdict_is_compact(said: str) -> None:
    verdict = said.splitlines()[0]
    assert verdict.startswith("CRAG verdict: ") and len(verdict.encode()) <= 400, verdict
    assert "crag_" not in said and "{'" not in said and "{\"" not in said  # no strip metadata, no JSON


@pytest.mark.parametrize("question", QUESTIONS)
def test_an_agent_reads_the_verdict_and_the_knowledge_through_a_component_tool(retriever, question):
    from haystack.components.agents import Agent
    from haystack.dataclasses import ChatMessage
    from haystack.tools import ComponentTool

    from crag_haystack.testing import ToolCallingChatGenerator

    block = CorrectiveRetriever(retriever)
    tool = ComponentTool(component=block, name="search_knowledge", description="Search the knowledge base.",
                         outputs_to_string={"handler": knowledge_text})
    agent = Agent(chat_generator=ToolCallingChatGenerator(), tools=[tool])
    agent.warm_up()
    said = _tool_result(agent.run(messages=[ChatMessage.from_user(question)]))
    _verdict_is_compact(said)
    expected = block.run(query=question)
    assert said.splitlines()[0].startswith(f"CRAG verdict: {expected['action']}")
    if "abstention" in expected:
        reason = expected["abstention"].split("; the closest passage")[0]  # the rest is cut to keep the line short
        assert reason in said and "the closest passage" in said and len(said.splitlines()) == 1
    else:
        assert len(said.splitlines()) == 1 + len(expected["documents"])
        assert all(" ".join(d.content.split()) in said for d in expected["documents"])


def test_a_pipeline_tool_over_crag_hands_the_agent_hundreds_of_bytes_not_its_metadata(retriever):
    import haystack.tools

    if not hasattr(haystack.tools, "PipelineTool"):
        pytest.skip("no PipelineTool in this Haystack version")
    from haystack.components.agents import Agent
    from haystack.dataclasses import ChatMessage
    from haystack.tools import PipelineTool

    from crag_haystack.testing import ToolCallingChatGenerator

    pipeline = Pipeline()
    pipeline.add_component("retriever", retriever)
    pipeline.add_component("crag", CRAG())
    pipeline.connect("retriever.documents", "crag.documents")
    recipe = {"input_mapping": {"query": ["retriever.query", "crag.query"]},
              "output_mapping": {"crag.documents": "documents", "crag.abstention": "abstention", "crag.crag": "crag"}}
    raw = PipelineTool(pipeline, name="search_knowledge", description="Search.", **recipe)
    tool = PipelineTool(pipeline, name="search_knowledge", description="Search.",
                        outputs_to_string={"handler": knowledge_text}, **recipe)
    asked = [ChatMessage.from_user(CORRECT_Q)]
    plain = _tool_result(Agent(chat_generator=ToolCallingChatGenerator(), tools=[raw]).run(messages=asked))
    said = _tool_result(Agent(chat_generator=ToolCallingChatGenerator(), tools=[tool]).run(messages=asked))
    _verdict_is_compact(said)
    knowledge = said.split("\n", 1)[1]
    assert len(said) - len(knowledge) <= 400 and len(plain) > 3 * len(said)  # the default: strips' metadata JSON
    abstained = _tool_result(Agent(chat_generator=ToolCallingChatGenerator(), tools=[tool]).run(
        messages=[ChatMessage.from_user(INCORRECT_Q)]))
    assert abstained.startswith("CRAG verdict: incorrect, judged by lexical; no reliable knowledge: the retrieved "
                                "passages were judged "
                                "irrelevant") and len(abstained) <= 400


TUNGSTEN = ("Tungsten, or wolfram, is a chemical element; it has symbol W and atomic number 74. It is a metal "
            "found naturally on Earth almost exclusively as compounds with other elements.\n\n"
            "Tungsten has the highest melting point of all known elements, 3422 degrees Celsius.")
MERCURY = ("Mercury is a chemical element; it has symbol Hg and atomic number 80. It is the only metallic element "
           "that is liquid at standard temperature and pressure.")
#: names the element: the tungsten page, which states an atomic number, lacks it (a distinguishing term missing)
MERCURY_Q = "What is the atomic number of the chemical element Mercury?"


def _replay(tmp_path, *pages) -> str:
    import json

    path = tmp_path / "web.jsonl"
    results = [{"title": title, "url": f"https://en.wikipedia.org/wiki/{title}", "text": text}
               for title, text in pages]
    path.write_text(json.dumps({"query": MERCURY_Q, "results": results}) + "\n")
    return str(path)


def test_the_web_search_tool_judges_web_strips_as_the_pipeline_does(tmp_path):
    from haystack.components.agents import Agent
    from haystack.dataclasses import ChatMessage
    from haystack.tools import ComponentTool

    from crag_haystack import CorrectiveWebSearch, ReplayWebSearch, build_crag_pipeline
    from crag_haystack.testing import ExtractiveChatGenerator, FixedRetriever, ToolCallingChatGenerator

    def agent_reads(path: str) -> str:
        tool = ComponentTool(component=CorrectiveWebSearch(ReplayWebSearch(path)), name="search_web",
                             description="Search the web.", outputs_to_string={"handler": knowledge_text})
        return _tool_result(Agent(chat_generator=ToolCallingChatGenerator(), tools=[tool]).run(
            messages=[ChatMessage.from_user(MERCURY_Q)]))

    wrong_page = agent_reads(_replay(tmp_path, ("Tungsten", TUNGSTEN)))
    _verdict_is_compact(wrong_page)
    assert wrong_page.startswith("CRAG verdict: ambiguous") and "below the upper threshold" in wrong_page
    assert "weak match" in wrong_page and "atomic number 74" in wrong_page  # kept, as the pipeline keeps it, flagged
    both = _replay(tmp_path, ("Tungsten", TUNGSTEN), ("Mercury", MERCURY))
    right_page = agent_reads(both)
    assert right_page.startswith("CRAG verdict: correct") and "atomic number 80" in right_page
    assert "melting point" not in right_page  # the tungsten paragraph that shares no question term is dropped
    # the pipeline's web branch keeps the same strips, with the same scores
    tool_strips = CorrectiveWebSearch(ReplayWebSearch(both)).run(query=MERCURY_Q)["documents"]
    pipeline = build_crag_pipeline(FixedRetriever({MERCURY_Q: [Document(content="Lyon is a city in France.")]}),
                                   ExtractiveChatGenerator(), web_search=ReplayWebSearch(both))
    ran = pipeline.run({"query": MERCURY_Q}, include_outputs_from={"web_refiner"})
    assert ran["retrieval_router"]["action"] == "incorrect"
    assert sorted((d.content, d.meta["crag_score"]) for d in ran["web_refiner"]["documents"]) == sorted(
        (d.content, d.meta["crag_score"]) for d in tool_strips)  # the keywords' search ranks the pages otherwise


def test_the_web_search_tool_says_why_there_is_nothing_and_saves(tmp_path):
    from crag_haystack import CorrectiveWebSearch, KnowledgeRefiner, ReplayWebSearch

    web = CorrectiveWebSearch(ReplayWebSearch(_replay(tmp_path)), refiner=KnowledgeRefiner(origin="web", strip_top_k=2))
    out = web.run(query=MERCURY_Q)
    assert out["documents"] == [] and "no web knowledge" in out["abstention"]
    assert knowledge_text(out).startswith("CRAG verdict: incorrect; no reliable knowledge: there is no web knowledge")
    pipeline = Pipeline()
    pipeline.add_component("web", web)
    loaded = Pipeline.loads(pipeline.dumps()).get_component("web")
    assert isinstance(loaded.web_search, ReplayWebSearch) and loaded.refiner.strip_top_k == 2
    assert "haystack_integrations.components.websearch.crag.CorrectiveWebSearch" in pipeline.dumps()
    with pytest.raises(TypeError, match="web_search must be"):
        CorrectiveWebSearch("serpapi")


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
