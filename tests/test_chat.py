"""Chat: CRAG judges the standalone question. A pronoun follow-up on its own is never judged Correct (any
passage about anyone born would match it); with a chat engine that condenses, CRAG judges the condensed
question and finds the right person's passage."""

import re

import pytest

from crag_shared import Action, Corrector

BIOGRAPHIES = [
    "Marie Curie was born in Warsaw in 1867 and studied physics in Paris.",
    "Albert Einstein was born in Ulm in 1879 and worked at the patent office in Bern.",
    "Ada Lovelace was born in London in 1815 and wrote notes on the Analytical Engine.",
    "Alan Turing was born in London in 1912 and worked at Bletchley Park.",
    "Grace Hopper was born in New York City in 1906 and joined the Navy reserve.",
]


def test_a_pronoun_follow_up_is_never_judged_correct_and_the_trace_says_why():
    result = Corrector().correct("When was he born?", BIOGRAPHIES)
    assert result.action is not Action.CORRECT
    decided = next(step for step in result.trace.steps if step.name == "decide")
    assert "names no one but 'he'" in decided.why
    named = Corrector().correct("When was Albert Einstein born?", BIOGRAPHIES)
    assert named.action is Action.CORRECT and "Ulm in 1879" in named.knowledge_text


def condensing_rule(prompt: str) -> str:
    """Condense like a chat LLM: the follow-up's pronoun becomes the last person the user named."""
    if "Follow Up Input:" in prompt:
        history, question = prompt.split("Follow Up Input:")
        said = " ".join(line for line in history.splitlines() if line.strip().lower().startswith("user"))
        names = re.findall(r"\b([A-Z][a-z]+ [A-Z][a-z]+)\b", said)
        question = question.split("Standalone question:")[0].strip()
        return re.sub(r"\b(he|she)\b", names[-1], question) if names else question
    return "[offline stand-in LLM] " + " ".join(prompt.split())[-160:]


def test_a_three_turn_chat_judges_the_condensed_question():
    pytest.importorskip("llama_index.core")
    from llama_index.core.chat_engine import CondensePlusContextChatEngine, ContextChatEngine
    from llama_index.core.schema import NodeWithScore, TextNode

    from crag_llamaindex import CRAGPostprocessor
    from crag_llamaindex.testing import FixedRetriever, RuleLLM

    nodes = [NodeWithScore(node=TextNode(text=t, id_=str(i)), score=0.5) for i, t in enumerate(BIOGRAPHIES)]

    class EveryQuery(FixedRetriever):  # the same five biographies for any question, as a vague retriever would
        def _retrieve(self, query_bundle):
            return list(nodes)

    llm = RuleLLM(condensing_rule)
    crag = CRAGPostprocessor()
    chat = CondensePlusContextChatEngine.from_defaults(EveryQuery({}), llm=llm, node_postprocessors=[crag])
    chat.chat("Tell me about Albert Einstein.")
    answer = chat.chat("When was he born?")  # condensed: "When was Albert Einstein born?"
    assert [n.node.get_content() for n in answer.source_nodes] == [BIOGRAPHIES[1]]
    answer = chat.chat("Where was Grace Hopper born?")  # a standalone question stays as it is
    assert [n.node.get_content() for n in answer.source_nodes] == [BIOGRAPHIES[4]]
    raw = ContextChatEngine.from_defaults(EveryQuery({}), llm=RuleLLM(condensing_rule),
                                          node_postprocessors=[CRAGPostprocessor()])
    raw.chat("Tell me about Albert Einstein.")
    sources = raw.chat("When was he born?").source_nodes  # the raw follow-up: no biography is handed on
    assert [n.node.node_id for n in sources] == ["crag"] and "names no one" in sources[0].node.get_content()


def test_build_crag_pipeline_hands_a_pronoun_follow_up_nothing_as_the_core_does():
    pytest.importorskip("haystack")
    from haystack import Document

    from crag_haystack import build_crag_pipeline
    from crag_haystack.testing import ExtractiveChatGenerator, FixedRetriever

    generator = ExtractiveChatGenerator()
    question = "When was he born?"
    retriever = FixedRetriever({question: [Document(content=t) for t in BIOGRAPHIES]})
    result = build_crag_pipeline(retriever, generator, evaluator="default").run({"query": question})
    core = Corrector().correct(question, BIOGRAPHIES)
    assert core.abstained and "no_answer" in result and generator.prompts == []
    assert "names no one" in result["no_answer"]["replies"][0].meta["crag_abstention"]
    assert "names no one" in core.abstention.reason


def test_a_three_turn_haystack_chat_pipeline_judges_the_condensed_question():
    """The recipe the Haystack guide shows: a rewriter (prompt builder → chat generator → OutputAdapter) turns
    the follow-up into a standalone question, which the retriever and CRAG both get."""
    pytest.importorskip("haystack")
    from haystack import Document, Pipeline, component
    from haystack.components.builders import ChatPromptBuilder
    from haystack.components.converters import OutputAdapter
    from haystack.dataclasses import ChatMessage

    from crag_haystack import CRAG

    @component
    class CondensingChatGenerator:  # a chat LLM's condensing, offline (condensing_rule)
        @component.output_types(replies=list[ChatMessage])
        def run(self, messages: list[ChatMessage]) -> dict:
            return {"replies": [ChatMessage.from_assistant(condensing_rule(messages[-1].text))]}

    @component
    class EveryQuery:  # the same five biographies for any question, as a vague retriever would
        @component.output_types(documents=list[Document])
        def run(self, query: str) -> dict:
            return {"documents": [Document(content=t) for t in BIOGRAPHIES]}

    condense = [ChatMessage.from_user(
        "{% for m in history %}{{ m.role.value }}: {{ m.text }}\n{% endfor %}"
        "Follow Up Input: {{ query }}\nStandalone question:")]
    pipeline = Pipeline()
    pipeline.add_component("condense_prompt", ChatPromptBuilder(template=condense, required_variables="*"))
    pipeline.add_component("condenser", CondensingChatGenerator())
    pipeline.add_component("standalone", OutputAdapter(template="{{ replies[0].text }}", output_type=str))
    pipeline.add_component("retriever", EveryQuery())
    pipeline.add_component("crag", CRAG())
    pipeline.connect("condense_prompt.prompt", "condenser.messages")
    pipeline.connect("condenser.replies", "standalone.replies")
    pipeline.connect("standalone.output", "retriever.query")
    pipeline.connect("standalone.output", "crag.query")
    pipeline.connect("retriever.documents", "crag.documents")
    history: list[ChatMessage] = []

    def turn(question: str) -> dict:
        result = pipeline.run({"condense_prompt": {"query": question, "history": list(history)}},
                              include_outputs_from={"standalone"})
        history.extend([ChatMessage.from_user(question), ChatMessage.from_assistant("(the answer)")])
        return result

    turn("Tell me about Albert Einstein.")
    second = turn("When was he born?")
    assert second["standalone"]["output"] == "When was Albert Einstein born?"
    assert second["crag"]["action"] == "correct"
    assert [d.content for d in second["crag"]["documents"]] == [BIOGRAPHIES[1]]
    third = turn("Where was Grace Hopper born?")  # a standalone question stays as it is
    assert [d.content for d in third["crag"]["documents"]] == [BIOGRAPHIES[4]]
    raw = CRAG().run(query="When was he born?", documents=[Document(content=t) for t in BIOGRAPHIES])
    assert raw["action"] != "correct" and "documents" not in raw  # without condensing: nothing handed on
