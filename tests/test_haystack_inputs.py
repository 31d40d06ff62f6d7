"""What a Haystack user passes that is not quite right, and models configured the Haystack way: wrong input
types fail at the component naming them, Document dicts (hayhooks, REST) are accepted, evaluators are
objects or specs with options and a ComponentDevice, wrong embedders are refused at construction, and a
query embedding the pipeline already made is reused. Runs on the declared floor, the newest 2.x and 3.x."""

import pytest
from haystack import Document, Pipeline
from haystack.utils import ComponentDevice

from crag_haystack import CRAG, KnowledgeGate, KnowledgeRefiner, RetrievalRouter
from crag_haystack.testing import HashingDocumentEmbedder, HashingTextEmbedder, embedding_judged_pipeline
from crag_shared import LexicalEvaluator
from crag_shared.demo import QUESTIONS, corpus

CORRECT_Q, AMBIGUOUS_Q, INCORRECT_Q = QUESTIONS
COMPONENTS = [CRAG, RetrievalRouter, KnowledgeRefiner]


def documents():
    return [Document(content=p.text, id=p.id, meta={"title": p.title}) for p in corpus()]


@pytest.mark.parametrize("make", [CRAG, RetrievalRouter, KnowledgeRefiner, KnowledgeGate])
def test_wrong_documents_fail_naming_them_and_document_dicts_are_read(make):
    component = make()
    name = make.__name__
    with pytest.raises(TypeError, match=rf"{name}: documents\[0\] is a str.*Document\(content=\.\.\.\)"):
        component.run(query=CORRECT_Q, documents=["a passage as a plain string"])
    with pytest.raises(TypeError, match=rf"{name}: documents must be a list"):
        component.run(query=CORRECT_Q, documents=None)
    with pytest.raises(TypeError, match=rf"{name}: documents\[1\] is a int"):
        component.run(query=CORRECT_Q, documents=[documents()[0], 3])
    as_objects = component.run(query=CORRECT_Q, documents=documents())
    as_dicts = component.run(query=CORRECT_Q, documents=[d.to_dict() for d in documents()])
    as_dicts.pop("crag", None), as_objects.pop("crag", None)  # the trace's timings differ
    assert as_dicts == as_objects


@pytest.mark.parametrize("make", COMPONENTS)
def test_evaluator_none_or_a_wrong_type_fails_at_construction(make):
    with pytest.raises(TypeError, match="evaluator must be a spec string"):
        make(evaluator=None)
    with pytest.raises(TypeError, match="evaluator must be a spec string"):
        make(evaluator=42)


@pytest.mark.parametrize("make", COMPONENTS)
def test_an_evaluator_object_is_used_and_saved_with_its_settings(make):
    tuned = LexicalEvaluator(sentence_weight=0.1, thresholds=(0.3, -0.6))
    component = make(evaluator=tuned)
    saved = component.to_dict()["init_parameters"]
    assert saved["evaluator"] == "lexical"
    assert saved["evaluator_options"] == {"sentence_weight": 0.1, "thresholds": [0.3, -0.6]}
    pipeline = Pipeline()
    pipeline.add_component("crag", component)
    loaded = Pipeline.loads(pipeline.dumps()).get_component("crag")
    inputs = {"query": AMBIGUOUS_Q, "documents": documents()}
    first, second = loaded.run(**inputs), component.run(**inputs)
    first.pop("crag", None), second.pop("crag", None)  # the trace's timings differ
    assert first == second
    with pytest.raises(ValueError, match="give them to the evaluator instance"):
        make(evaluator=tuned, evaluator_options={"sentence_weight": 0.3})


def test_a_device_is_a_component_device_for_model_evaluators_only(tmp_path):
    with pytest.raises(ValueError, match="runs no model"):
        CRAG(evaluator="lexical", device=ComponentDevice.from_str("cpu"))
    with pytest.raises(TypeError, match="ComponentDevice"):
        RetrievalRouter(evaluator=f"cross-encoder:{tmp_path}", device="cpu")


def test_a_device_and_options_reach_a_model_evaluator_and_are_saved(request):
    pytest.importorskip("transformers")
    tiny_bert = request.getfixturevalue("tiny_bert")
    router = RetrievalRouter(evaluator=f"cross-encoder:{tiny_bert}", evaluator_options={"max_length": 64},
                             device=ComponentDevice.from_str("cpu"))
    evaluator = router._corrector.evaluator
    assert evaluator.max_length == 64 and evaluator.device == "cpu"
    saved = router.to_dict()["init_parameters"]
    assert saved["device"] == ComponentDevice.from_str("cpu").to_dict() and saved["evaluator_options"] == {
        "max_length": 64}
    again = RetrievalRouter.from_dict(router.to_dict())
    assert again.device == ComponentDevice.from_str("cpu") and again._corrector.evaluator.max_length == 64


def test_wrong_embedders_are_refused_at_construction():
    with pytest.raises(TypeError, match="text_embedder must be a text embedder"):
        CRAG(evaluator="embedding", text_embedder=HashingDocumentEmbedder())
    with pytest.raises(TypeError, match="document_embedder must be a document embedder"):
        RetrievalRouter(evaluator="embedding", text_embedder=HashingTextEmbedder(),
                        document_embedder=HashingTextEmbedder())


def test_a_query_embedding_made_in_the_pipeline_is_reused():
    text_embedder = HashingTextEmbedder()
    pipeline = embedding_judged_pipeline(text_embedder)
    pipeline.get_component("crag").corrector.evaluator.scale()  # found once, on crag's reference set
    text_embedder.calls = 0
    out = pipeline.run({"text_embedder": {"text": CORRECT_Q}, "crag": {"query": CORRECT_Q, "documents": documents()}})
    assert text_embedder.calls == 1 and out["crag"]["action"] == "correct"  # the pipeline's only
    alone = CRAG(evaluator="embedding", text_embedder=text_embedder, document_embedder=HashingDocumentEmbedder())
    alone.warm_up()
    alone.corrector.evaluator.scale()
    text_embedder.calls = 0
    assert alone.run(query=CORRECT_Q, documents=documents())["scores"] == out["crag"]["scores"]
    assert text_embedder.calls == 1  # without one connected, the judge embeds the query once


def haystack_version():
    import importlib.metadata

    return tuple(int(part) for part in importlib.metadata.version("haystack-ai").split(".")[:2])


def crag_pipeline():
    from haystack.components.builders import ChatPromptBuilder
    from haystack.dataclasses import ChatMessage

    from crag_haystack.testing import ExtractiveChatGenerator, FixedRetriever

    pipeline = Pipeline()
    pipeline.add_component("retriever", FixedRetriever({q: documents() for q in QUESTIONS}))
    pipeline.add_component("crag", CRAG(on_web_failure="keep"))  # Ambiguous keeps its strips without the web
    template = [ChatMessage.from_user("{% for d in documents %}{{ d.content }}\n{% endfor %}Q: {{ query }}")]
    pipeline.add_component("prompt_builder", ChatPromptBuilder(template=template,
                                                               required_variables=["query", "documents"]))
    pipeline.add_component("generator", ExtractiveChatGenerator())
    pipeline.connect("retriever.documents", "crag.documents")
    pipeline.connect("crag.documents", "prompt_builder.documents")
    pipeline.connect("prompt_builder.prompt", "generator.messages")
    return pipeline


@pytest.mark.parametrize("stop_at", ["crag", "prompt_builder", "generator"])
def test_a_breakpoint_saves_and_resumes_to_the_same_answer(stop_at):
    import json

    if haystack_version() < (2, 31):
        pytest.skip("Haystack before 2.31 writes pipeline outputs into snapshots as raw JSON")
    from haystack.core.errors import BreakpointException
    from haystack.dataclasses.breakpoints import Breakpoint, PipelineSnapshot

    expected = crag_pipeline().run({"query": AMBIGUOUS_Q})
    with pytest.raises(BreakpointException) as stopped:
        crag_pipeline().run({"query": AMBIGUOUS_Q}, break_point=Breakpoint(component_name=stop_at, visit_count=0))
    saved = json.loads(json.dumps(stopped.value.pipeline_snapshot.to_dict()))  # as a snapshot file holds it
    resumed = crag_pipeline().run(data={}, pipeline_snapshot=PipelineSnapshot.from_dict(saved))
    assert resumed["generator"]["replies"][0].text == expected["generator"]["replies"][0].text
    if stop_at != "crag":  # CRAG's own outputs came back from the snapshot, typed
        report, original = resumed["crag"]["crag"], expected["crag"]["crag"]
        assert type(report) is type(original) and report.action == "ambiguous"
        assert report.scores == original.scores and report.strips == original.strips


class RecordingTracer:
    """A Haystack tracer that keeps every span's name and tags."""

    def __init__(self):
        self.spans = []

    def make(self):
        import contextlib

        from haystack import tracing

        recorder = self

        class Span(tracing.Span):
            def __init__(self, name, tags):
                self.name, self.tags = name, dict(tags or {})

            def set_tag(self, key, value):
                self.tags[key] = value

        class Tracer(tracing.Tracer):
            @contextlib.contextmanager
            def trace(self, operation_name, tags=None, parent_span=None):
                span = Span(operation_name, tags)
                recorder.spans.append(span)
                yield span

            def current_span(self):
                return recorder.spans[-1] if recorder.spans else None

        return Tracer()


@pytest.fixture
def traced():
    from haystack import tracing

    recorder = RecordingTracer()
    tracing.enable_tracing(recorder.make())
    yield recorder
    tracing.disable_tracing()
    tracing.tracer.is_content_tracing_enabled = False


def test_spans_for_judge_refine_and_correct_with_tags_and_content_only_when_on(traced):
    from haystack import tracing

    from crag_haystack import build_crag_pipeline
    from crag_haystack.testing import ExtractiveChatGenerator, FixedRetriever

    build_crag_pipeline(FixedRetriever({q: documents() for q in QUESTIONS}), ExtractiveChatGenerator(),
                        evaluator="default").run(
        {"query": AMBIGUOUS_Q})
    ours = {span.name: span for span in traced.spans if span.name.startswith("crag.")}
    assert {"crag.judge", "crag.refine"} <= set(ours)
    assert ours["crag.judge"].tags["crag.action"] == "ambiguous" and ours["crag.judge"].tags["crag.scores"]
    assert ours["crag.refine"].tags["crag.strips"] >= 1
    assert all("crag.query" not in span.tags for span in ours.values())  # content tracing is off
    tracing.tracer.is_content_tracing_enabled = True
    CRAG(evaluator="default").run(query=CORRECT_Q, documents=documents())
    correct = [span for span in traced.spans if span.name == "crag.correct"][-1]
    assert correct.tags["crag.query"] == CORRECT_Q and correct.tags["crag.action"] == "correct"
    assert correct.tags["crag.component"] == "CRAG" and correct.tags["crag.abstained"] is False
