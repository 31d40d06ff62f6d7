"""The follow-up rule per language: a question that names no one but a pronoun is never judged Correct, whatever
the evaluator, in every language with a follow-up table; a question with a name is judged as its scores say."""

import pytest

from crag_shared import Action, Corrector, CRAGConfig, FunctionLLM, LLMEvaluator
from crag_shared.adapter import ambiguous_rule
from crag_shared.policy import ABOVE_EVERY_SCORE
from crag_shared.text import follow_up_languages, follow_up_pronoun

BIOGRAPHIES = [
    "Marie Curie wurde 1867 in Warschau geboren. Marie Curie est née à Varsovie en 1867.",
    "Albert Einstein wurde 1879 in Ulm geboren. Albert Einstein nació en Ulm en 1879.",
    "Ada Lovelace was born in London in 1815 and wrote notes on the Analytical Engine.",
]


def sure_judge() -> LLMEvaluator:
    """An LLM judge that answers "yes" for every passage, asked even where the offline judge finds nothing:
    every score is 1.0."""
    return LLMEvaluator(FunctionLLM(lambda prompt: "yes"), mode="per_document", skip_below=None)


def decided(result):
    return result.trace.find("decide")[0]


def test_a_judge_sure_of_every_passage_scores_them_all_one():
    assert sure_judge().score("Wann wurde sie geboren?", BIOGRAPHIES) == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("language,question,pronoun", [
    ("de", "Wann wurde sie geboren?", "sie"), ("en", "When was he born?", "he"),
    ("fr", "Quand est-elle née ?", "elle"), ("es", "¿Cuándo nació él?", "él")])
def test_a_pronoun_follow_up_is_not_judged_correct_by_a_judge_sure_of_every_passage(language, question, pronoun):
    result = Corrector(sure_judge(), language=language).correct(question, BIOGRAPHIES)
    assert result.scores == [1.0, 1.0, 1.0]
    assert result.action is Action.AMBIGUOUS and result.knowledge == []  # no web: nothing of it is handed on
    assert f"names no one but '{pronoun}'" in decided(result).why and decided(result).follow_up == language
    assert "names no one" in result.abstention.reason


@pytest.mark.parametrize("language,question", [
    ("de", "Wann wurde Marie Curie geboren?"), ("en", "When was Ada Lovelace born?"),
    ("fr", "Quand Marie Curie est-elle née ?"), ("es", "¿Cuándo nació Albert Einstein?")])
def test_a_question_with_a_name_is_judged_as_its_scores_say(language, question):
    result = Corrector(sure_judge(), language=language).correct(question, BIOGRAPHIES)
    assert result.action is Action.CORRECT and decided(result).why == "" and decided(result).follow_up == language
    assert len(result.knowledge) == 3


def test_the_configured_language_reaches_the_rule():
    config = CRAGConfig(evaluator="llm:per_document", evaluator_options={"skip_below": None}, language="de")
    corrector = Corrector.from_config(config, llm=FunctionLLM(lambda prompt: "yes"))
    assert corrector.language == "de"
    assert corrector.correct("Wann wurde sie geboren?", BIOGRAPHIES).action is Action.AMBIGUOUS
    english = Corrector.from_config(CRAGConfig(evaluator="llm:per_document", evaluator_options={"skip_below": None}),
                                    llm=FunctionLLM(lambda prompt: "yes"))
    assert english.correct("Wann wurde sie geboren?", BIOGRAPHIES).action is Action.CORRECT  # no English pronoun


def test_auto_reads_the_rule_in_the_language_it_detects():
    pytest.importorskip("py3langid")
    corrector = Corrector(sure_judge(), language="auto")
    assert corrector.question_language("Wann wurde sie geboren?") == "de"
    result = corrector.correct("Wann wurde sie geboren?", BIOGRAPHIES)
    assert result.action is Action.AMBIGUOUS and decided(result).follow_up == "de"


def test_the_rule_follows_the_lexical_evaluators_language_by_default():
    from crag_shared import LexicalEvaluator

    assert Corrector(LexicalEvaluator(language="fr")).language == "fr"
    assert Corrector(sure_judge()).language == "en"  # an evaluator that does not analyze text: English


def test_a_language_without_a_table_is_not_read_and_the_trace_says_so():
    assert "it" not in follow_up_languages() and follow_up_pronoun("Quando è nata lei?", "it") is None
    result = Corrector(sure_judge(), language="it").correct("Quando è nata lei?", BIOGRAPHIES)
    assert result.action is Action.CORRECT and decided(result).follow_up == ""
    unread = Corrector(sure_judge()).correct("Ada Lovelace?", ["Ada Lovelace was born in London."])
    assert decided(unread).follow_up == "en"


def test_the_follow_up_languages_are_the_four_with_tables_and_the_guide_lists_them():
    from pathlib import Path

    assert follow_up_languages() == ("de", "en", "es", "fr")
    guide = (Path(__file__).resolve().parents[1] / "docs" / "guides" / "languages.md").read_text(encoding="utf-8")
    section = guide.split("## Follow-up questions")[1].split("\n## ")[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "(`" in line]
    listed = [row.split("(`")[1].split("`)")[0] for row in rows]
    assert sorted(listed) == list(follow_up_languages())


@pytest.mark.parametrize("language,question,expected", [
    ("de", "Wie alt ist er?", "er"),
    ("de", "Wann wurde die Brücke eröffnet?", None),  # no pronoun: "die" is the article
    ("de", "Was hat er 1990 gemacht?", None),  # a number
    ("de", "Wann wurde sie in Hamburg geboren?", None),  # two content words
    ("fr", "Qu'a-t-il inventé ?", "il"),  # elided: "qu'" before "a", "t" joins "il"
    ("fr", "Où Hugo est-il ?", None),  # a capital inside the question: a name
    ("fr", "Qu'est-ce que la photosynthèse ?", None),  # "ce" of "est-ce" is no subject
    ("fr", "Quelle est sa profession ?", "sa"),
    ("es", "¿Cuál es su profesión?", "su"),
    ("es", "¿Dónde está el museo?", None),  # "el" without its accent is the article
    ("en", "Where did she study medicine?", None),  # two relation words
    ("en", "What is his occupation?", "his"),
])
def test_what_specifies_a_question_per_language(language, question, expected):
    assert follow_up_pronoun(question, language) == expected


def test_the_ambiguous_floor_reads_the_questions_language():
    def floor(question: str, language: str = "en") -> float:
        return ambiguous_rule(question, 0.3, "drop", "drop", language).floor

    assert floor("Wann wurde sie geboren?", "de") == ABOVE_EVERY_SCORE
    assert floor("Wann wurde sie geboren?") == 0.3  # English by default: no English pronoun
    assert floor("Wann wurde Marie Curie geboren?", "de") == 0.3


def test_the_haystack_router_stamps_a_german_follow_up_above_every_score():
    """Ambiguous without web knowledge keeps only strips above the floor the router stamps for the gate: for a
    follow-up in the router's language, above every score."""
    pytest.importorskip("haystack")
    from haystack import Document

    from crag_haystack import RetrievalRouter

    documents = [Document(content=text) for text in BIOGRAPHIES[:2]]
    # thresholds wide enough that both readings are Ambiguous (German +0.15; English -0.69, which holds no 'wann'):
    # only the language differs
    wide = {"upper": 0.5, "lower": -0.8}
    german = RetrievalRouter(language="de", **wide).run(query="Wann wurde sie geboren?", documents=documents)
    assert german["action"] == "ambiguous"
    assert {d.meta["crag_keep_at"] for d in german["ambiguous"]} == {ABOVE_EVERY_SCORE}
    english = RetrievalRouter(**wide).run(query="Wann wurde sie geboren?", documents=documents)
    assert english["action"] == "ambiguous" and ABOVE_EVERY_SCORE not in {d.meta["crag_keep_at"]
                                                                           for d in english["ambiguous"]}
