"""One decider: the same questions through the four entry points give identical actions, scores and knowledge.

Corrector.correct, the Haystack `CRAG` component, `build_crag_pipeline` and LlamaIndex's
`CRAGPostprocessor` all run the Corrector's own slices; nothing re-implements the decision.
"""

import json

import pytest

pytest.importorskip("haystack")
pytest.importorskip("llama_index.core")

from haystack import Document
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.document_stores.in_memory import InMemoryDocumentStore
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from crag_haystack import CRAG, ReplayWebSearch, build_crag_pipeline
from crag_haystack.testing import ExtractiveChatGenerator, FixedRetriever
from crag_llamaindex import CRAGPostprocessor
from crag_shared import ActionPolicy, Corrector, CRAGConfig, Passage, ReplaySearch
from crag_shared.adapter import UNVERIFIED_END, unverified_mark
from crag_shared.demo import QUESTIONS, corpus, recorded_web_path

TABLE = [*QUESTIONS,
         "Which river flows through Paris?",  # nothing about it retrieved: the web, with few recorded pages
         "When did the Sydney Opera House open?",
         "Who designed the Golden Gate Bridge and when was it built?"]
SETTINGS = [
    {},
    {"upper": 0.9, "lower": -0.2, "refine_mode": "fixed_num", "strip_top_k": 3},  # more Ambiguous
    {"upper": 0.95, "lower": 0.9},  # nearly everything Incorrect: the web path and its fallbacks
    {"upper": 0.9, "lower": -0.2, "ambiguous": "guard"},  # Ambiguous strips beside the web's, marked unverified
]


def knowledge_of_strips(strips):
    return sorted((s.origin.value, s.text.strip(), round(s.score, 9), s.unverified) for s in strips)


def knowledge_of_documents(documents):
    return sorted((d.meta["crag_origin"], d.content.strip(), round(d.meta["crag_score"], 9), "unverified" in d.meta)
                  for d in documents)


def knowledge_of_nodes(nodes):
    return sorted((n.node.metadata["crag_origin"], n.node.get_content().strip(), round(n.score, 9),
                   "unverified" in n.node.metadata) for n in nodes)


@pytest.fixture(scope="module")
def store():
    store = InMemoryDocumentStore()
    store.write_documents([Document(content=p.text, id=p.id, meta={"title": p.title}) for p in corpus()])
    return store


@pytest.mark.parametrize("settings", SETTINGS)
@pytest.mark.parametrize("question", TABLE)
def test_four_entry_points_agree(store, question, settings):
    retrieved = InMemoryBM25Retriever(store, top_k=3).run(query=question)["documents"]
    replay = ReplaySearch(recorded_web_path())
    config = CRAGConfig(**settings)

    core = Corrector.from_config(config, web_search=replay).correct(question, [d.content for d in retrieved])

    component = CRAG(web_search=ReplayWebSearch(str(recorded_web_path())), **settings).run(
        query=question, documents=retrieved)

    pipeline_settings = {k: v for k, v in settings.items()}
    pipeline = build_crag_pipeline(InMemoryBM25Retriever(store, top_k=3), ExtractiveChatGenerator(),
                                   web_search=ReplayWebSearch(str(recorded_web_path())), evaluator="default",
                                   **pipeline_settings)
    ran = pipeline.run({"query": question}, include_outputs_from={"gate", "retrieval_router"})

    nodes = [NodeWithScore(node=TextNode(text=d.content, id_=d.id, metadata=dict(d.meta)), score=d.score)
             for d in retrieved]
    strips, li = CRAGPostprocessor(web_search=replay, **settings).correct(nodes, QueryBundle(question))

    assert core.action.value == component["action"] == ran["retrieval_router"]["action"] == li.action.value
    assert core.scores == component["scores"] == ran["retrieval_router"]["scores"] == li.scores
    expected = knowledge_of_strips(core.knowledge)
    assert knowledge_of_documents(component.get("documents", [])) == expected
    assert knowledge_of_documents(ran.get("gate", {}).get("documents", [])) == expected
    assert knowledge_of_nodes(strips) == expected
    abstained = core.abstained  # and every entry point abstains with it, the generator not called
    assert ("abstention" in component) == ("no_answer" in ran) == ("generator" not in ran) == li.abstained == abstained


def test_the_table_covers_every_action_and_an_abstention(store):
    seen, abstained = set(), 0
    for settings in SETTINGS:
        corrector = Corrector.from_config(CRAGConfig(**settings), web_search=ReplaySearch(recorded_web_path()))
        for question in TABLE:
            docs = InMemoryBM25Retriever(store, top_k=3).run(query=question)["documents"]
            seen.add(corrector.judge(question, [d.content for d in docs]).action.value)
            abstained += corrector.correct(question, [d.content for d in docs]).abstained
    assert seen == {"correct", "ambiguous", "incorrect"} and abstained


def test_without_web_every_entry_point_abstains_on_incorrect_or_keeps_its_best_strips_when_asked(store):
    question = QUESTIONS[2]
    retrieved = InMemoryBM25Retriever(store, top_k=3).run(query=question)["documents"]
    nodes = [NodeWithScore(node=TextNode(text=d.content, id_=d.id), score=d.score) for d in retrieved]
    for keep in ("drop", "keep"):
        core = Corrector(policy=ActionPolicy(0.95, 0.9), on_web_failure=keep).correct(
            question, [d.content for d in retrieved])
        generator = ExtractiveChatGenerator()
        pipeline = build_crag_pipeline(InMemoryBM25Retriever(store, top_k=3), generator, upper=0.95, lower=0.9,
                                       on_web_failure=keep, evaluator="default")
        ran = pipeline.run({"query": question}, include_outputs_from={"gate"})
        component = CRAG(upper=0.95, lower=0.9, on_web_failure=keep).run(query=question, documents=retrieved)
        strips, li = CRAGPostprocessor(upper=0.95, lower=0.9, on_web_failure=keep).correct(nodes, QueryBundle(question))
        assert core.action.value == "incorrect" and bool(core.knowledge) == (keep == "keep")
        assert knowledge_of_documents(ran.get("gate", {}).get("documents", [])) == knowledge_of_strips(core.knowledge)
        assert knowledge_of_documents(component.get("documents", [])) == knowledge_of_strips(core.knowledge)
        assert knowledge_of_nodes(strips) == knowledge_of_strips(core.knowledge)
        assert len(generator.prompts) == (keep == "keep") and li.abstained == (keep == "drop")


@pytest.mark.parametrize("question", TABLE[:3])
def test_a_model_evaluator_judges_web_strips_in_the_pipeline_too(store, tiny_bert, question):
    settings = {"evaluator": f"cross-encoder:{tiny_bert}", "upper": 0.99, "lower": 0.98}
    retrieved = InMemoryBM25Retriever(store, top_k=3).run(query=question)["documents"]
    core = Corrector.from_config(CRAGConfig(**settings), web_search=ReplaySearch(recorded_web_path())).correct(
        question, [d.content for d in retrieved])
    pipeline = build_crag_pipeline(InMemoryBM25Retriever(store, top_k=3), ExtractiveChatGenerator(),
                                   web_search=ReplayWebSearch(str(recorded_web_path())), **settings)
    ran = pipeline.run({"query": question}, include_outputs_from={"gate", "retrieval_router"})
    assert core.external and ran["retrieval_router"]["scores"] == core.scores
    assert knowledge_of_documents(ran["gate"]["documents"]) == knowledge_of_strips(core.knowledge)


def test_a_pipeline_loads_its_model_once(store, tiny_bert):
    spec = f"cross-encoder:{tiny_bert}"
    pipeline = build_crag_pipeline(InMemoryBM25Retriever(store, top_k=3), ExtractiveChatGenerator(),
                                   web_search=ReplayWebSearch(str(recorded_web_path())), evaluator=spec,
                                   on_web_failure="keep")
    names = ("retrieval_router", "correct_refiner", "ambiguous_refiner", "web_refiner", "fallback_refiner")
    evaluators = {id(pipeline.get_component(n)._corrector.evaluator) for n in names}
    assert len(evaluators) == 1
    reloaded = type(pipeline).loads(pipeline.dumps())
    assert {id(reloaded.get_component(n)._corrector.evaluator) for n in names} == evaluators


def prompt_knowledge(documents):
    """What a prompt reads of Haystack documents, as `CorrectionResult.knowledge_text` writes strips."""
    return "\n".join(f"{unverified_mark()}\n{d.content}\n{UNVERIFIED_END}" if "unverified" in d.meta else d.content
                     for d in documents)


@pytest.mark.parametrize("ambiguous", ["drop", "guard"])
def test_every_popqa_question_gets_one_verdict_through_the_four_entry_points(bench_dir, ambiguous):
    """Without web search: one rule (`AmbiguousRule`) applied to the same scores, so an Ambiguous question
    the core abstains on (e.g. "What is Ludwig Lichtschein's occupation?") reaches no generator."""
    rows = [json.loads(line) for line in (bench_dir / "popqa_ctxs.jsonl").open(encoding="utf-8")]
    retrieved = {r["question"]: [Document(content=c["text"], meta={"title": c["title"]}) for c in r["ctxs"][:10]]
                 for r in rows}
    corrector = Corrector(ambiguous=ambiguous)
    component = CRAG(ambiguous=ambiguous)
    generator = ExtractiveChatGenerator()
    pipeline = build_crag_pipeline(FixedRetriever(retrieved), generator, ambiguous=ambiguous, evaluator="default")
    postprocessor = CRAGPostprocessor(ambiguous=ambiguous)
    actions = set()
    for row in rows:
        question, documents = row["question"], retrieved[row["question"]]
        core = corrector.correct(question, [Passage(d.content, title=d.meta["title"]) for d in documents])
        crag = component.run(query=question, documents=documents)
        asked = len(generator.prompts)
        ran = pipeline.run({"query": question}, include_outputs_from={"gate", "retrieval_router"})
        nodes = [NodeWithScore(node=TextNode(text=d.content, metadata=dict(d.meta))) for d in documents]
        strips, li = postprocessor.correct(nodes, QueryBundle(question))
        actions.add(core.action.value)

        assert core.action.value == crag["action"] == ran["retrieval_router"]["action"] == li.action.value, question
        handed = ran.get("gate", {}).get("documents", [])
        assert prompt_knowledge(crag.get("documents", [])) == prompt_knowledge(handed) == core.knowledge_text, question
        assert knowledge_of_nodes(strips) == knowledge_of_strips(core.knowledge), question
        assert ("abstention" in crag) == ("no_answer" in ran) == li.abstained == core.abstained, question
        assert len(generator.prompts) - asked == (not core.abstained), question  # the generator: only with knowledge
    assert actions == {"correct", "ambiguous", "incorrect"}


def test_lichtschein_reaches_no_generator_without_web_search(bench_dir):
    row = next(json.loads(line) for line in (bench_dir / "popqa_ctxs.jsonl").open(encoding="utf-8")
               if "Lichtschein" in line)
    documents = [Document(content=c["text"], meta={"title": c["title"]}) for c in row["ctxs"][:10]]
    # the best passages name namesakes (Ludwig Lichtheim, Ludwig Merwart) and score -0.78: thresholds this low keep
    # them Ambiguous, the path under test, where nothing scores the upper threshold
    wide = {"lower": -0.9, "strip_threshold": -0.9}
    generator = ExtractiveChatGenerator()
    ran = build_crag_pipeline(FixedRetriever({row["question"]: documents}), generator, evaluator="default",
                              **wide).run(
        {"query": row["question"]}, include_outputs_from={"retrieval_router"})
    core = Corrector.from_config(CRAGConfig(**wide)).correct(row["question"], [d.content for d in documents])
    assert core.action.value == ran["retrieval_router"]["action"] == "ambiguous" and core.abstained
    assert "upper threshold" in ran["no_answer"]["replies"][0].meta["crag_abstention"] and generator.prompts == []
    guarded = Corrector.from_config(CRAGConfig(**wide, ambiguous="guard")).correct(
        row["question"], [d.content for d in documents])
    assert guarded.knowledge and all(s.unverified for s in guarded.knowledge)  # every strip below the upper
