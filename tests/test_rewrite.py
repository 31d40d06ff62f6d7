import pytest

from crag_shared import QueryRewriter
from crag_shared.rewrite import PAPER_REWRITE_PROMPT, keyword_query


@pytest.mark.parametrize("question,expected", [
    ("What is Henry Feilden's occupation?", "Henry Feilden, occupation"),
    ("In what city was Billy Carlson born?", "city, Billy Carlson, born"),
    ("Who directed the 1997 film Titanic?", "directed, 1997, Titanic"),
    ("?", "?"),
])
def test_offline_keywords(question, expected):
    assert keyword_query(question) == expected


def test_offline_keywords_keep_at_most_three_names_first():
    query = keyword_query("Did Marie Curie meet Albert Einstein in Brussels at the Solvay conference on physics?")
    assert query.split(", ") == ["Marie Curie", "Albert Einstein", "Brussels"]


def test_llm_rewrite_uses_the_paper_prompt_and_caps_keywords(scripted_llm):
    llm = scripted_llm(["query: Henry Feilden, occupation, politics, Blackburn"])
    result = QueryRewriter(llm).rewrite("What is Henry Feilden's occupation?")
    assert result.query == "Henry Feilden, occupation, politics" and result.method == "llm" and result.note is None
    assert llm.prompts[0] == PAPER_REWRITE_PROMPT.format(question="What is Henry Feilden's occupation?")
    assert llm.prompts[0].endswith("question: What is Henry Feilden's occupation?\nquery:")


async def test_failing_or_empty_llm_falls_back_to_keywords(scripted_llm):
    failing = QueryRewriter(scripted_llm(fail=TimeoutError("llm timed out")))
    result = await failing.arewrite("What is Henry Feilden's occupation?")
    assert result.query == "Henry Feilden, occupation" and result.method == "keywords"
    assert "TimeoutError: llm timed out" in result.note
    empty = QueryRewriter(scripted_llm(["   \n"])).rewrite("What is Henry Feilden's occupation?")
    assert empty.method == "keywords" and empty.note == "LLM rewrite was empty"


def test_template_needs_question_slot():
    with pytest.raises(ValueError, match="question"):
        QueryRewriter(template="no slot here")


@pytest.mark.parametrize("language,question,name", [
    ("en", "When was Ludwig van Beethoven born?", "Ludwig van Beethoven"),
    ("en", "Who wrote The Lord of the Rings?", "Lord of the Rings"),
    ("en", "Who is the governor of the Bank of England?", "Bank of England"),
    ("de", "Wo wurde Johann Wolfgang von Goethe geboren?", "Johann Wolfgang von Goethe"),
    ("fr", "Quand Charles de Gaulle est-il né ?", "Charles de Gaulle"),
    ("es", "¿Dónde nació Miguel de Cervantes?", "Miguel de Cervantes"),
    ("zh", "埃菲尔铁塔是哪一年建成的？", "埃菲尔铁塔"),  # 尔 is a stopword on its own
    ("zh", "巴拉克·奥巴马出生在哪里？", "巴拉克·奥巴马"),  # 巴 too; the middle dot joins the name
    ("ja", "エッフェル塔はいつ建てられましたか？", "エッフェル塔"),  # katakana and kanji, one name
    ("ja", "東京スカイツリーの高さは何メートルですか？", "東京スカイツリー"),
])
def test_the_offline_rewrite_keeps_names_whole_in_every_language(language, question, name):
    assert name in keyword_query(question, language=language).split(", ")


@pytest.mark.parametrize("question,name", [("埃菲尔铁塔是哪一年建成的？", "埃菲尔铁塔"),
                                           ("巴拉克·奥巴马出生在哪里？", "巴拉克·奥巴马")])
def test_chinese_names_stay_whole_without_a_segmenter_too(question, name):
    from crag_shared.rewrite import key_phrases
    from crag_shared.text.analysis import Analyzer

    plain = Analyzer("zh", segmenter=False)
    assert not plain.segmented and any(name in phrase for phrase in key_phrases(plain, question))


def test_a_name_particle_joins_only_names():
    query = keyword_query("Did Marie Curie meet Albert Einstein in Brussels at the Solvay conference on physics?")
    assert query.split(", ") == ["Marie Curie", "Albert Einstein", "Brussels"]
    assert keyword_query("What is the capital of France?") == "capital, France"
