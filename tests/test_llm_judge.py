"""Where crag holds an LLM, it judges with it: one call per query, faults to the offline judge, recorded."""

import json
import logging
import threading
import time

import pytest

pytest.importorskip("haystack")
pytest.importorskip("llama_index.core")

from haystack import Document, Pipeline, component
from haystack.dataclasses import ChatMessage
from llama_index.core import Settings
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from crag_haystack import CRAG, RecordedChatGenerator, build_crag_pipeline
from crag_haystack.testing import ExtractiveChatGenerator, FixedRetriever
from crag_llamaindex import CRAGPostprocessor, CRAGQueryEngine, CRAGWorkflow
from crag_llamaindex.testing import RecordedLLM as RecordedLlamaIndexLLM
from crag_llamaindex.testing import RuleLLM
from crag_shared import Corrector, CRAGConfig, FunctionLLM, LexicalEvaluator, LLMEvaluator
from crag_shared.recorded import RecordedLLM, RecordingMissing, prompt_key
from crag_shared.testing import judge_reply

QUESTION = "Who wrote Middlemarch?"
ANSWER = "Middlemarch is a novel by George Eliot, published in eight instalments in 1871 and 1872."
OTHER = "Silas Marner is a novel by George Eliot about a linen weaver. It was published in 1861."
OFF = "The Eiffel Tower is a wrought-iron lattice tower in Paris. It opened in 1889."
PASSAGES = [ANSWER, OTHER, OFF]


def judge_of(prompt: str) -> str:
    """A careful judge's reply: yes only for the Middlemarch passage."""
    numbers = [line.split('"')[1] for line in prompt.splitlines() if line.startswith('<document number="')]
    if "<number>" not in prompt:
        return "yes" if "Middlemarch is a novel" in prompt else "no"
    entries = prompt.split('<document number="')[1:]
    return "\n".join(f"{n}: {'yes' if 'Middlemarch is a novel' in e else 'no'}" for n, e in zip(numbers, entries))


class Judging(CustomLLM):
    """A LlamaIndex LLM that judges like `judge_of`, answers anything else with its first context line, and
    counts the judge prompts it was sent."""

    judged: int = 0
    other: int = 0

    @property
    def metadata(self) -> LLMMetadata:
        """A completion model's metadata."""
        return LLMMetadata(model_name="judging")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs):
        """The judge's reply, or an answer."""
        if '<document number="' in prompt:
            self.judged += 1
            return CompletionResponse(text=judge_of(prompt))
        self.other += 1
        return CompletionResponse(text="George Eliot")

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs):
        """One chunk."""
        yield self.complete(prompt)


class Faulty(CustomLLM):
    """A LlamaIndex LLM that raises, hangs or answers out of format when asked to judge."""

    fault: str = "raise"

    @property
    def metadata(self) -> LLMMetadata:
        """A completion model's metadata."""
        return LLMMetadata(model_name=f"faulty-{self.fault}")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs):
        """Fails the way it was told to."""
        if '<document number="' not in prompt:
            return CompletionResponse(text="answer")
        if self.fault == "raise":
            raise ConnectionError("the LLM provider is down")
        if self.fault == "hang":
            time.sleep(2)
        return CompletionResponse(text="maybe")

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs):
        """One chunk."""
        yield self.complete(prompt)


@component
class JudgingGenerator:
    """A Haystack chat generator judging like `judge_of` (and failing when told), counting judge calls."""

    def __init__(self, fault: str = "") -> None:
        self.fault = fault
        self.judged = 0
        self.answered = 0

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]):
        """Judge, fail, or answer."""
        prompt = messages[-1].text or ""
        if '<document number="' not in prompt:
            self.answered += 1
            return {"replies": [ChatMessage.from_assistant("George Eliot")]}
        self.judged += 1
        if self.fault == "raise":
            raise TimeoutError("the LLM provider timed out")
        if self.fault == "hang":
            time.sleep(2)
        return {"replies": [ChatMessage.from_assistant("maybe" if self.fault == "maybe" else judge_of(prompt))]}


def nodes():
    return [NodeWithScore(node=TextNode(text=t, id_=f"n{i}"), score=0.5) for i, t in enumerate(PASSAGES)]


def documents():
    return [Document(content=t, id=f"d{i}") for i, t in enumerate(PASSAGES)]


@pytest.fixture
def no_settings_llm():
    previous = Settings._llm
    Settings._llm = None
    yield
    Settings._llm = previous


# -- who judges by default -------------------------------------------------------------------------
def test_every_entry_point_that_holds_an_llm_judges_with_it_in_one_call(no_settings_llm):
    core_llm = FunctionLLM(judge_of)
    calls = []
    counting = FunctionLLM(lambda p: calls.append(p) or judge_of(p))
    core = Corrector(llm=counting).correct(QUESTION, PASSAGES)
    assert core.scores == [1.0, -1.0, -1.0] and core.typed_summary().judge == "llm" and len(calls) == 1
    assert Corrector.from_config(CRAGConfig(), llm=core_llm).correct(QUESTION, PASSAGES).scores == core.scores
    judging = Judging()
    _, post = CRAGPostprocessor(llm=judging).correct(nodes(), QueryBundle(QUESTION))
    assert post.scores == core.scores and judging.judged == 1
    engine_llm = Judging()
    engine = CRAGQueryEngine(FixedRetriever_li(), llm=engine_llm)
    response = engine.query(QUESTION)
    assert response.metadata["crag"]["judge"] == "llm" and response.metadata["crag"]["scores"] == core.scores
    assert engine_llm.judged == 1 and engine_llm.other == 1  # one judge call, one answer; strips not sent back
    generator = JudgingGenerator()
    ran = build_crag_pipeline(FixedRetriever({QUESTION: documents()}), generator).run(
        {"query": QUESTION}, include_outputs_from={"gate"})
    assert ran["retrieval_router"]["scores"] == core.scores and generator.judged == 1 and generator.answered == 1
    assert [d.content for d in ran["gate"]["documents"]] == [s.text for s in core.knowledge]
    component_generator = JudgingGenerator()
    out = CRAG(chat_generator=component_generator).run(query=QUESTION, documents=documents())
    assert out["scores"] == core.scores and out["crag"].judge == "llm" and component_generator.judged == 1


async def test_the_workflow_judges_with_its_llm(no_settings_llm):
    llm = Judging()
    answer = await CRAGWorkflow(FixedRetriever_li(), llm=llm, timeout=30).run(query=QUESTION)
    assert answer.metadata["crag"]["judge"] == "llm" and llm.judged == 1


def FixedRetriever_li():
    from crag_llamaindex.testing import FixedRetriever as LlamaIndexRetriever

    return LlamaIndexRetriever({QUESTION: nodes()})


def test_a_cheaper_judge_and_the_offline_default_are_one_argument_away(no_settings_llm):
    answering, judging = Judging(), Judging()
    CRAGQueryEngine(FixedRetriever_li(), llm=answering, judge_llm=judging).query(QUESTION)
    assert judging.judged == 1 and answering.judged == 0 and answering.other == 1
    offline = Judging()
    response = CRAGQueryEngine(FixedRetriever_li(), llm=offline, evaluator="default").query(QUESTION)
    assert offline.judged == 0 and response.metadata["crag"]["judge"] == "lexical"
    generator, judge = JudgingGenerator(), JudgingGenerator()
    build_crag_pipeline(FixedRetriever({QUESTION: documents()}), generator, judge_generator=judge).run(
        {"query": QUESTION})
    assert judge.judged == 1 and generator.judged == 0
    component_generator = JudgingGenerator()
    CRAG(chat_generator=component_generator, evaluator="default").run(query=QUESTION, documents=documents())
    assert component_generator.judged == 0


def test_the_drop_in_judges_with_settings_llm_only_where_the_user_set_one(no_settings_llm):
    assert CRAGPostprocessor().corrector.evaluator.__class__ is not LLMEvaluator  # no LLM: the offline default
    Settings.llm = Judging()
    assert isinstance(CRAGPostprocessor().corrector.evaluator, LLMEvaluator)
    assert not isinstance(CRAGPostprocessor(evaluator="default").corrector.evaluator, LLMEvaluator)
    assert not isinstance(CRAG().corrector.evaluator, LLMEvaluator)  # a component without a generator


def test_the_haystack_refiners_never_call_the_llm_and_keep_the_accepted_documents_strips(no_settings_llm):
    long_answer = ANSWER + " Its subtitle is A Study of Provincial Life. " + OFF
    generator = JudgingGenerator()
    retriever = FixedRetriever({QUESTION: [Document(content=long_answer), Document(content=OTHER)]})
    ran = build_crag_pipeline(retriever, generator).run({"query": QUESTION}, include_outputs_from={"gate"})
    core = Corrector(llm=FunctionLLM(judge_of)).correct(QUESTION, [long_answer, OTHER])
    assert generator.judged == 1  # the router's call; the refiners scored strips offline
    assert sorted(d.content for d in ran["gate"]["documents"]) == sorted(s.text for s in core.knowledge)
    assert any("George Eliot" in d.content for d in ran["gate"]["documents"])
    assert all(d.meta["crag_score"] >= core.thresholds[0] for d in ran["gate"]["documents"])


# -- faults are not verdicts ------------------------------------------------------------------------
@pytest.mark.parametrize("fault", ["raise", "hang", "maybe"])
def test_a_llamaindex_llm_that_fails_falls_back_to_the_offline_judge(no_settings_llm, caplog, fault):
    post = CRAGPostprocessor(llm=Faulty(fault=fault), evaluator_options={"timeout": 0.3})
    with caplog.at_level(logging.WARNING):
        _, result = post.correct(nodes(), QueryBundle(QUESTION))
    assert result.scores == LexicalEvaluator().score(QUESTION, PASSAGES)
    assert [f.step for f in result.fallbacks if not f.expected] == ["evaluate"]
    reason = result.fallbacks[0].reason
    assert {"raise": "ConnectionError", "hang": "timed out", "maybe": "no yes/no verdict"}[fault] in reason
    assert "lexical (no verdict from the LLM)" in result.typed_summary().judge
    assert any("fallback in evaluate" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("fault", ["raise", "hang", "maybe"])
def test_a_haystack_generator_that_fails_falls_back_to_the_offline_judge(caplog, fault):
    crag = CRAG(chat_generator=JudgingGenerator(fault), evaluator_options={"timeout": 0.3})
    with caplog.at_level(logging.WARNING):
        out = crag.run(query=QUESTION, documents=documents())
    assert out["scores"] == LexicalEvaluator().score(QUESTION, PASSAGES)
    fallbacks = [f for f in out["crag"]["fallbacks"] if not f["expected"]]
    assert [f["step"] for f in fallbacks] == ["evaluate"]
    assert any(r.name.startswith("haystack") and "fallback in evaluate" in r.getMessage() for r in caplog.records)


def test_a_reply_that_answers_some_documents_uses_the_offline_judge_for_the_rest():
    result = Corrector(llm=FunctionLLM(lambda p: "1: yes\n3: no")).correct(QUESTION, PASSAGES)
    assert result.scores[0] == 1.0 and result.scores[2] == -1.0
    assert result.scores[1] == LexicalEvaluator().score(QUESTION, [OTHER])[0]
    assert result.typed_summary().judge == "llm; lexical for 1 of 3 passages (no verdict from the LLM)"
    assert "document 2" in result.fallbacks[0].reason


def test_off_topic_retrieval_costs_no_call_and_says_so():
    calls = []
    result = Corrector(llm=FunctionLLM(lambda p: calls.append(p) or "1: yes")).correct(QUESTION, [OFF, OFF + " Tall."])
    assert calls == [] and result.action.value == "incorrect"
    assert result.typed_summary().judge.startswith("lexical (the LLM was not asked")


# -- recorded LLMs ------------------------------------------------------------------------------------
def test_a_recording_replays_what_was_recorded_and_names_what_was_not(tmp_path):
    path = tmp_path / "judge.jsonl"
    live = FunctionLLM(judge_of)
    recorded = Corrector(llm=RecordedLLM(path, live, mode="record")).correct(QUESTION, PASSAGES)
    replay = RecordedLLM(path)
    assert Corrector(llm=replay).correct(QUESTION, PASSAGES).scores == recorded.scores and replay.calls == 1
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert rows[0]["key"] == prompt_key(rows[0]["prompt"]) and rows[0]["reply"].startswith("1: yes")
    with pytest.raises(RecordingMissing, match="no recorded reply for the prompt beginning"):
        replay.complete("an unrecorded prompt")
    unknown = Corrector(llm=RecordedLLM(path)).correct("Who wrote Silas Marner?", PASSAGES)
    assert "RecordingMissing" in unknown.fallbacks[0].reason  # a missing reply is a fault, not a verdict
    with pytest.raises(FileNotFoundError, match="no recording"):
        RecordedLLM(tmp_path / "absent.jsonl")
    with pytest.raises(ValueError, match="pass the llm"):
        RecordedLLM(path, mode="record")
    (tmp_path / "bad.jsonl").write_text('{"key": "k"}\n')
    with pytest.raises(ValueError, match=r"bad\.jsonl:1"):
        RecordedLLM(tmp_path / "bad.jsonl")


def test_the_framework_recorded_llms_record_once_and_replay_in_ci(tmp_path, no_settings_llm):
    path = str(tmp_path / "li.jsonl")
    live = Judging()
    first = CRAGQueryEngine(FixedRetriever_li(), llm=RecordedLlamaIndexLLM(path, live, mode="auto")).query(QUESTION)
    replay = RecordedLlamaIndexLLM(path)
    again = CRAGQueryEngine(FixedRetriever_li(), llm=replay).query(QUESTION)
    assert str(again) == str(first) and again.metadata["crag"]["scores"] == first.metadata["crag"]["scores"]
    assert replay.calls == 2 and live.judged == 1  # judge + answer, replayed; the live LLM judged once
    path_h = str(tmp_path / "hs.jsonl")
    recorder = RecordedChatGenerator(path_h, JudgingGenerator(), mode="record")
    recorded = CRAG(chat_generator=recorder).run(query=QUESTION, documents=documents())
    pipeline = Pipeline()
    pipeline.add_component("crag", CRAG(chat_generator=RecordedChatGenerator(path_h)))
    reloaded = Pipeline.loads(pipeline.dumps())
    replayed = reloaded.run({"crag": {"query": QUESTION, "documents": documents()}})["crag"]
    assert replayed["scores"] == recorded["scores"] == [1.0, -1.0, -1.0]
    assert "haystack_integrations.components.generators.crag.RecordedChatGenerator" in pipeline.dumps()


def test_the_stand_in_llms_answer_the_judge_prompt_as_the_lexical_judge_would():
    prompt = LLMEvaluator(FunctionLLM(str), skip_below=None)._prompts(QUESTION, PASSAGES)[0]
    upper = LexicalEvaluator().thresholds[0]
    expected = ["yes" if s >= upper else "no" for s in LexicalEvaluator().score(QUESTION, PASSAGES)]
    assert judge_reply(prompt) == "\n".join(f"{i}: {v}" for i, v in enumerate(expected, 1))
    assert judge_reply("What is the capital of France?") is None
    assert RuleLLM().complete(prompt).text == judge_reply(prompt)
    assert ExtractiveChatGenerator().run([ChatMessage.from_user(prompt)])["replies"][0].text == judge_reply(prompt)


def test_a_slow_judge_runs_in_the_callers_context():
    import contextvars

    marker = contextvars.ContextVar("marker", default="lost")
    seen = []
    marker.set("kept")
    judge = LLMEvaluator(FunctionLLM(lambda p: seen.append(marker.get()) or "1: yes"))
    judge.evaluate(QUESTION, [ANSWER])
    assert seen == ["kept"] and threading.current_thread() is threading.main_thread()
