"""Near misses: the right neighbourhood without the answer is judged away, through the core and the real
LlamaIndex and Haystack classes, and the trace says which signal did it; in-corpus retrieval still passes."""

import pytest

from crag_shared import Action, Corrector, LexicalEvaluator, StripRefiner
from crag_shared.text.reading import Reading, answer_kind, relation_key

# Written for these tests (the benchmark's own sets stay in benchmarks/near_miss).
QUESTION = "Where was Grace Hopper born?"
ANSWERING = ("Grace Hopper was born on December 9, 1906, in New York City, the eldest of three children of "
             "Walter Fletcher Murray and Mary Campbell Van Horne.")
NEAR = [
    "In 1943 Grace Hopper joined the United States Navy Reserve and was assigned to the Bureau of Ordnance "
    "Computation Project at Harvard University, where she programmed the Mark I computer.",
    "Grace Hopper retired from the Navy in 1986 as a rear admiral, at the age of 79, after a ceremony aboard "
    "the USS Constitution.",
    "Grace Hopper's work led to COBOL, one of the first high-level programming languages, whose design "
    "drew on her earlier FLOW-MATIC language.",
]
SECOND = ("When did the Hubble Space Telescope launch?",
          "The Hubble Space Telescope was launched into low Earth orbit on April 24, 1990, aboard the Space "
          "Shuttle Discovery during mission STS-31.",
          ["The Hubble Space Telescope is named after the astronomer Edwin Hubble, who showed that the universe "
           "is expanding.",
           "The Hubble Space Telescope has a 2.4-metre mirror and observes in the ultraviolet, visible and near "
           "infrared.",
           "Servicing missions by astronauts repaired and upgraded the Hubble Space Telescope five times."])


def test_a_question_is_read_for_its_answer_kind_entity_and_relation():
    reading = Reading(QUESTION)
    assert (reading.kind, set(reading.entity), set(reading.relation)) == ("place", {"grace", "hopper"}, {"born"})
    assert [answer_kind(q) for q in ("When did X sink?", "How many moons does Mars have?", "Who wrote Emma?",
                                     "What is John Finlay's occupation?", "Who was Ada Lovelace?",
                                     "What is the capital of Peru?")] == [
        "time", "number", "person", "description", "description", None]
    assert relation_key("wrote") == relation_key("author") == relation_key("written")
    assert relation_key("founder") == relation_key("founded") and relation_key("birthplace") == "born"


def test_the_lexical_judge_lowers_a_passage_only_on_evidence_and_names_it():
    plain = LexicalEvaluator(reads_answer=False).evaluate(QUESTION, [ANSWERING, *NEAR])
    read = LexicalEvaluator().evaluate(QUESTION, [ANSWERING, *NEAR])
    assert min(plain.scores[1:]) > 0.3  # by word overlap alone, the near misses look relevant
    assert read.scores[0] == pytest.approx(plain.scores[0]) and read.reasons[0] == ""
    # the COBOL passage holds no place at all: evidence that it does not say where she was born
    assert read.scores[3] < plain.scores[3] and read.reasons[3] == "holds no place (-0.40)"
    # Harvard and the USS Constitution are places: without a word against them, the passages keep their score
    assert read.scores[1:3] == pytest.approx(plain.scores[1:3]) and read.reasons[1:3] == ["", ""]


def test_a_namesake_inside_a_longer_name_is_not_the_entity():
    reading = Reading("What is Charles Harrison's occupation?")
    assert reading.assess("Charles Harrison (1835-1903) was a British politician.").full_name
    assert not reading.assess("Bishop Charles Harrison Mason Sr. was a Pentecostal pastor.").full_name
    assert Reading("What is E. David Redwine's occupation?").assess(
        "Edward David Redwine (born 1947) is a politician.").full_name


def test_other_languages_and_opting_out_keep_plain_word_overlap():
    assert LexicalEvaluator(reads_answer=False).evaluate(QUESTION, NEAR).reasons == []
    assert LexicalEvaluator(language="de").evaluate("Wo wurde Grace Hopper geboren?", NEAR).reasons == []
    with pytest.raises(ValueError, match="relation_penalty"):
        LexicalEvaluator(relation_penalty=-1)


@pytest.mark.parametrize("question, answering, near", [(QUESTION, ANSWERING, NEAR), SECOND])
def test_the_reader_abstains_on_near_misses_and_keeps_the_answer_in_corpus(question, answering, near):
    corrector = Corrector(evaluator="reader")
    missed = corrector.correct(question, near)
    assert missed.abstained and missed.knowledge == []
    assert missed.abstention.reason.startswith("no retrieved strip passed the strip threshold; the closest passage, "
                                              "passage ")
    found = corrector.correct(question, [near[0], answering, *near[1:]])
    assert not found.abstained and found.action is Action.CORRECT
    assert answering.split(",")[0] in found.knowledge_text


def test_ambiguous_without_web_keeps_only_strips_that_would_be_correct_unless_told_to_keep():
    evaluator = LexicalEvaluator(reads_answer=False)  # word overlap: the near misses score in between
    scores = evaluator.score(QUESTION, NEAR)
    upper = max(scores) + 0.01
    strict = Corrector(evaluator, policy=None, refiner=StripRefiner("fixed_num"))
    strict.policy = type(strict.policy)(upper, -0.9)
    result = strict.correct(QUESTION, NEAR)
    assert result.action is Action.AMBIGUOUS and result.abstained
    fallback = result.trace.fallbacks[0]
    assert "at least the upper threshold" in fallback.applied
    keeping = Corrector(evaluator, refiner=StripRefiner("fixed_num"), on_web_failure="keep")
    keeping.policy = type(keeping.policy)(upper, -0.9)
    kept = keeping.correct(QUESTION, NEAR)
    assert kept.action is Action.AMBIGUOUS and not kept.abstained


def _llamaindex_engine(question, passages):
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.schema import NodeWithScore, TextNode

    from crag_llamaindex import CRAGPostprocessor, CRAGQueryEngine
    from crag_llamaindex.testing import FixedRetriever, RuleLLM

    retriever = FixedRetriever({question: [NodeWithScore(node=TextNode(text=t, id_=str(i)), score=0.5)
                                           for i, t in enumerate(passages)]})
    llm = RuleLLM()
    return llm, [RetrieverQueryEngine.from_args(retriever, llm=llm,
                                                node_postprocessors=[CRAGPostprocessor(evaluator="reader")]),
                 CRAGQueryEngine(retriever, llm=llm, evaluator="reader")]


@pytest.mark.parametrize("question, answering, near", [(QUESTION, ANSWERING, NEAR), SECOND])
def test_llamaindex_query_engines_never_hand_the_llm_a_near_miss(question, answering, near):
    pytest.importorskip("llama_index.core")
    llm, (drop_in, engine) = _llamaindex_engine(question, near)
    assert engine.query(question).source_nodes == [] and llm.prompts == []  # CRAGQueryEngine: no LLM call
    response = drop_in.query(question)  # the drop-in: the LLM reads why, never the near miss
    assert [n.node.node_id for n in response.source_nodes] == ["crag"] and response.metadata["crag"]["abstained"]
    [prompt] = llm.prompts
    assert "CRAG found no reliable knowledge" in prompt and not any(text[:40] in prompt for text in near)
    llm, engines = _llamaindex_engine(question, [answering, *near])
    for engine in engines:
        assert engine.query(question).source_nodes
    assert len(llm.prompts) == 2 and all(answering[:40] in p for p in llm.prompts)


@pytest.mark.parametrize("question, answering, near", [(QUESTION, ANSWERING, NEAR), SECOND])
def test_haystack_pipelines_never_call_the_generator_on_near_misses(question, answering, near):
    pytest.importorskip("haystack")
    from haystack import Document

    from crag_haystack import build_crag_pipeline
    from crag_haystack.testing import ExtractiveChatGenerator, FixedRetriever, crag_component_pipeline

    for build in (build_crag_pipeline, crag_component_pipeline):
        for passages, abstains in ((near, True), ([*near[:1], answering, *near[1:]], False)):
            generator = ExtractiveChatGenerator()
            retriever = FixedRetriever({question: [Document(content=t) for t in passages]})
            result = build(retriever, generator, evaluator="reader").run({"query": question})
            assert ("no_answer" in result) is abstains
            assert (generator.prompts == []) is abstains
            if not abstains:
                assert answering[:40] in generator.prompts[0]


def test_a_possessive_in_the_question_is_held_by_the_name_alone():
    scores = LexicalEvaluator().evaluate("What is Henry Feilden's occupation?", [
        "Henry Master Feilden was an English Conservative Party politician.",
        "Bob Feilden was a British mechanical engineer."])
    assert scores.reasons[0] == "" and "'feilden" not in scores.reasons[1]
    assert scores.scores[0] > scores.scores[1]
