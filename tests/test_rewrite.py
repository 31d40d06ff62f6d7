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
