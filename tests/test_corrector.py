import asyncio
import logging

import pytest
from feilden import ABOUT, NAMESAKE, OFF, PAGES, QUERY

from crag_shared import (
    Action,
    ActionPolicy,
    Corrector,
    InMemorySearch,
    LexicalEvaluator,
    Origin,
    Passage,
    QueryRewriter,
    StripRefiner,
    WebSearchError,
)
from crag_shared.evaluators import Evaluation, RetrievalEvaluator
from crag_shared.trace import BelowLower
from crag_shared.types import WebResult, WebSearchResponse


class Judge(RetrievalEvaluator):
    """A judge whose verdict per text is chosen by the test: yes +1, no -1, unsure 0 (between the thresholds);
    pages about the politician are relevant by default."""

    VERDICT = {"yes": 1.0, "no": -1.0, "unsure": 0.0}

    def __init__(self, verdicts):
        self.verdicts = verdicts

    def evaluate(self, query, texts):
        return Evaluation([self.VERDICT[self.verdicts.get(t, "yes" if "Conservative" in t else "no")]
                           for t in texts])


class CountingEvaluator(LexicalEvaluator):
    def __init__(self):
        super().__init__()
        self.seen: list[str] = []

    def evaluate(self, query, texts):
        self.seen.extend(texts)
        return super().evaluate(query, texts)


def run(corrector, query, passages, mode):
    if mode == "sync":
        return corrector.correct(query, passages)
    return asyncio.run(corrector.acorrect(query, passages))


@pytest.fixture(params=["sync", "async"])
def mode(request):
    return request.param


def test_correct_refines_internal_passages_with_provenance(mode):
    passages = [Passage(ABOUT, id="n1", title="Henry Feilden", url="https://wiki/hf"), Passage(OFF, id="n2")]
    web = InMemorySearch(PAGES)
    result = run(Corrector(web_search=web), QUERY, passages, mode)
    assert result.action is Action.CORRECT
    assert web.queries == []  # Correct never touches the web
    assert result.knowledge and all(s.origin is Origin.INTERNAL for s in result.knowledge)
    strip = result.knowledge[0]
    assert (strip.source_id, strip.title, strip.url, strip.position) == ("n1", "Henry Feilden", "https://wiki/hf", 0)
    assert ABOUT[strip.start:strip.end] == strip.text
    assert result.scores[0] >= result.thresholds[0] > result.scores[1]
    assert "Eiffel" not in result.knowledge_text


def test_incorrect_searches_the_web_and_drops_internal(mode):
    web = InMemorySearch(PAGES)
    result = run(Corrector(web_search=web), QUERY, [OFF, "Bananas are yellow."], mode)
    assert result.action is Action.INCORRECT
    assert web.queries == ["Henry Feilden, occupation"] and result.rewritten_query == "Henry Feilden, occupation"
    assert result.knowledge and all(s.origin is Origin.WEB for s in result.knowledge)
    assert result.knowledge[0].text.startswith("Henry Feilden (Conservative politician): Henry Master Feilden")
    assert result.knowledge[0].url == PAGES[0]["url"]
    assert [r.url for r in result.web_results] == [PAGES[0]["url"]]
    assert result.fallbacks == []
    assert result.trace.find("filter_passages")[0].below_lower[0].index == 0


def test_ambiguous_combines_internal_then_web(mode):
    web = InMemorySearch(PAGES)
    corrector = Corrector(evaluator=(Judge({NAMESAKE: "unsure"})), web_search=web,
                          refiner=StripRefiner("selection"))
    result = run(corrector, QUERY, [NAMESAKE, OFF], mode)
    assert result.action is Action.AMBIGUOUS
    origins = [s.origin for s in result.knowledge]
    assert Origin.INTERNAL in origins and Origin.WEB in origins
    assert origins == sorted(origins, key=lambda o: o is Origin.WEB)  # internal first, then external
    assert [s.text for s in result.internal] == [NAMESAKE]  # the passage below the lower threshold is gone


def test_trace_records_every_step(mode):
    web = InMemorySearch(PAGES)
    result = run(Corrector(web_search=web), QUERY, [NAMESAKE, ""], mode)
    steps = [s.label() for s in result.trace.steps]
    for expected in ("skip_passage", "input", "evaluate", "decide", "rewrite", "web_search", "refine_web", "result"):
        assert expected in steps
    decide = result.trace.find("decide")[0]
    assert (decide.upper, decide.lower) == result.thresholds == LexicalEvaluator.default_thresholds
    assert result.trace.find("evaluate")[0].scores == result.scores
    assert result.trace.find("evaluate")[0].ms >= 0
    assert result.trace.find("refine_web")[0].strip_scores
    assert result.summary()["web_urls"] == [PAGES[0]["url"]]


def test_each_distinct_text_is_scored_once_per_query():
    ev = CountingEvaluator()
    passages = [ABOUT, ABOUT, "Henry Feilden sat for Blackburn."]
    result = Corrector(evaluator=ev, refiner=StripRefiner("selection")).correct(QUERY, passages)
    assert result.action is Action.CORRECT
    assert sorted(ev.seen) == sorted({ABOUT, "Henry Feilden sat for Blackburn."})  # strips came from the cache
    assert len(result.knowledge) == 2  # the duplicate passage yields one strip


class FailingWeb:
    def __init__(self, error=None, response=None):
        self.error, self.response = error, response

    def search(self, query, top_k=5):
        if self.error:
            raise self.error
        return self.response

    async def asearch(self, query, top_k=5):
        return self.search(query, top_k)


WEB_MISSING = [
    (None, "no web search configured"),
    (FailingWeb(WebSearchError("429 Too Many Requests")), "web search failed: WebSearchError: 429"),
    (FailingWeb(response=WebSearchResponse([])), "web search returned no results"),
    (FailingWeb(response=WebSearchResponse([WebResult("Henry Feilden", "https://e.org/empty")])),
     "web results had no text"),
]


@pytest.mark.parametrize("web,reason", WEB_MISSING)
def test_incorrect_without_web_knowledge_abstains(web, reason, mode):
    passages = [OFF, NAMESAKE.replace("Feilden", "Smith")]
    result = run(Corrector(web_search=web), QUERY, passages, mode)
    assert result.action is Action.INCORRECT and result.knowledge == [] and result.knowledge_text == ""
    assert result.abstained and result.abstention.code == "incorrect"
    assert reason in result.abstention.reason and result.web_missing.startswith(reason)
    assert [p.text for p in result.passages] == passages  # discarded, never lost: the result lists them
    assert result.trace.find("abstain")[0].code == "incorrect"
    assert result.summary()["abstained"] is True and result.summary()["abstention"]["code"] == "incorrect"


@pytest.mark.parametrize("web,reason", WEB_MISSING)
def test_incorrect_without_web_keeps_internal_flagged_when_asked(web, reason, mode):
    result = run(Corrector(web_search=web, on_web_failure="keep"), QUERY, [OFF, NAMESAKE.replace("Feilden", "Smith")],
                 mode)
    assert result.action is Action.INCORRECT and not result.abstained
    assert [s.origin for s in result.knowledge] == [Origin.INTERNAL, Origin.INTERNAL]  # nothing lost
    assert result.fallbacks[-1].step == "web_search" and result.fallbacks[-1].reason.startswith(reason)
    assert "kept the internal passages" in result.fallbacks[-1].applied


def test_incorrect_drop_lists_the_discarded_passages(mode):
    corrector = Corrector(web_search=FailingWeb(ConnectionError("offline")))
    result = run(corrector, QUERY, [OFF], mode)
    assert result.knowledge == [] and result.abstained
    assert "abstained" in result.fallbacks[-1].applied and not result.fallbacks[-1].expected
    assert result.trace.find("filter_passages")[0].below_lower == [BelowLower(0, "0", -1.0)]


def test_ambiguous_keeps_internal_knowledge_when_web_fails_only_as_correct_would_or_when_told(mode):
    judge = (Judge({NAMESAKE: "unsure"}))
    strict = run(Corrector(evaluator=judge, web_search=FailingWeb(TimeoutError("search timed out"))),
                 QUERY, [NAMESAKE], mode)
    assert strict.action is Action.AMBIGUOUS and strict.abstained and strict.knowledge == []
    assert strict.fallbacks[-1].applied.startswith("kept only the internal strips scoring at least the upper")
    assert "TimeoutError: search timed out" in strict.fallbacks[-1].reason
    result = run(Corrector(evaluator=judge, web_search=FailingWeb(TimeoutError("search timed out")),
                           on_web_failure="keep"), QUERY, [NAMESAKE], mode)
    assert result.action is Action.AMBIGUOUS and [s.text for s in result.knowledge] == [NAMESAKE]
    assert not result.abstained and "TimeoutError: search timed out" in result.web_missing
    assert result.fallbacks[-1].applied.startswith("kept the internal strips that pass the strip threshold")


def test_ambiguous_without_web_keeping_keeps_only_strips_passing_the_strip_threshold(mode):
    weak = "Bob Feilden was a British mechanical engineer. The Eiffel Tower stands in Paris. It is made of iron."
    corrector = Corrector(evaluator=(Judge({weak: "unsure", "Bob Feilden was a British mechanical "
                                                        "engineer.": "unsure"})),
                          refiner=StripRefiner("excerption", strip_words=3, threshold=0.0), on_web_failure="keep")
    result = run(corrector, QUERY, [weak], mode)
    assert result.action is Action.AMBIGUOUS and result.web_missing == "no web search configured"
    strips = result.trace.find("refine_internal")[0]
    assert strips.pieces == 3 and strips.kept == 1  # the Eiffel sentences scored below the strip threshold
    assert [s.text for s in result.knowledge] == ["Bob Feilden was a British mechanical engineer."]
    assert all(s.score >= 0.0 for s in result.knowledge)
    assert result.fallbacks[-1].expected and "web half is missing" in result.fallbacks[-1].applied


def test_ambiguous_with_no_strip_passing_and_no_web_abstains(mode):
    corrector = Corrector(evaluator=(Judge({NAMESAKE: "unsure"})),
                          refiner=StripRefiner("selection", threshold=0.5))
    result = run(corrector, QUERY, [NAMESAKE], mode)
    assert result.action is Action.AMBIGUOUS and result.knowledge == []
    assert result.abstention.code == "no_knowledge" and "no web search configured" in result.abstention.reason


@pytest.mark.parametrize("query", ["", "   \n"])
def test_an_empty_query_is_unjudged_never_correct(query, mode):
    web = InMemorySearch(PAGES)
    result = run(Corrector(web_search=web, on_web_failure="keep"), query, [ABOUT, OFF], mode)
    assert result.action is Action.UNJUDGED and result.knowledge == [] and result.scores == []
    assert result.abstention.code == "empty_query" and web.queries == []  # nothing judged, nothing searched
    assert [p.text for p in result.passages] == [ABOUT, OFF]
    assert result.trace.find("unjudged")[0].reason == "empty query"


@pytest.mark.parametrize("query", [None, 123, b"bytes"])
def test_a_query_that_is_not_a_string_raises_naming_it(query, mode):
    with pytest.raises(TypeError, match="query must be a string"):
        run(Corrector(), query, [ABOUT], mode)
    with pytest.raises(TypeError, match="query must be a string"):
        Corrector().judge(query, [ABOUT])


def test_no_passage_with_text_searches_the_web_or_abstains(mode):
    result = run(Corrector(), QUERY, ["", None, "  "], mode)
    assert result.action is Action.INCORRECT and result.abstention.code == "incorrect"
    web = InMemorySearch(PAGES)
    searched = run(Corrector(web_search=web), QUERY, ["", None], mode)
    assert web.queries and searched.external and not searched.abstained


def test_no_web_configured_is_said_once_at_info_and_faults_warn_each_time(caplog):
    caplog.set_level(logging.INFO, logger="crag")
    corrector = Corrector()
    for _ in range(3):
        assert corrector.correct(QUERY, [OFF]).abstained
        corrector.correct(QUERY, [NAMESAKE])
    records = [r for r in caplog.records if r.name == "crag"]
    assert [r.levelno for r in records] == [logging.INFO] and "no web search configured" in records[0].getMessage()
    assert all(f.expected for f in corrector.correct(QUERY, [OFF]).fallbacks)
    caplog.clear()
    failing = Corrector(web_search=FailingWeb(ConnectionError("offline")))
    for _ in range(2):
        failing.correct(QUERY, [OFF])
    assert [r.levelno for r in caplog.records if r.name == "crag"] == [logging.WARNING, logging.WARNING]


def test_correct_many_abstains_and_unjudges_as_alone():
    items = [(QUERY, [OFF]), ("", [ABOUT]), (QUERY, [ABOUT])]
    many = Corrector().correct_many(items)
    alone = [Corrector().correct(q, p) for q, p in items]
    assert [(r.action, r.abstention) for r in many] == [(r.action, r.abstention) for r in alone]
    assert [r.action for r in many] == [Action.INCORRECT, Action.UNJUDGED, Action.CORRECT]


class Down(RetrievalEvaluator):
    """An evaluator whose model server is down."""

    def evaluate(self, query, texts):
        raise ConnectionError("judge down")


def test_failing_evaluator_falls_back_to_lexical(mode):
    corrector = Corrector(evaluator=Down())
    result = run(corrector, QUERY, [ABOUT], mode)
    assert result.action is Action.CORRECT
    assert result.thresholds == LexicalEvaluator.default_thresholds
    assert result.fallbacks[0].step == "evaluate" and "judge down" in result.fallbacks[0].reason


def test_failing_evaluator_without_fallback_raises():
    corrector = Corrector(evaluator=Down(), fallback_evaluator=None)
    with pytest.raises(ConnectionError, match="judge down"):
        corrector.correct(QUERY, [ABOUT])


def test_llm_rewriter_failure_is_traced(scripted_llm, mode):
    web = InMemorySearch(PAGES)
    corrector = Corrector(web_search=web, rewriter=QueryRewriter(scripted_llm(fail=RuntimeError("quota"))))
    result = run(corrector, QUERY, [OFF], mode)
    assert result.rewritten_query == "Henry Feilden, occupation"
    assert result.fallbacks[0].step == "rewrite" and "quota" in result.fallbacks[0].reason


def test_snippets_are_used_when_no_page_has_text(mode):
    from crag_shared.types import WebResult

    response = WebSearchResponse([WebResult("Henry Feilden", "https://x/hf", "Henry Feilden, English politician")])
    result = run(Corrector(web_search=FailingWeb(response=response)), QUERY, [OFF], mode)
    assert [s.text for s in result.knowledge] == ["Henry Feilden, English politician"]
    assert result.fallbacks[0].step == "web_pages" and result.fallbacks[0].applied == "used the search snippets"


async def test_ambiguous_refines_internal_while_searching():
    web_started = asyncio.Event()

    class SlowWeb(InMemorySearch):
        async def asearch(self, query, top_k=5):
            web_started.set()
            await asyncio.sleep(0.05)
            return self.search(query, top_k)

    class WaitingJudge(Judge):
        async def aevaluate(self, query, texts):
            if texts == [NAMESAKE]:
                return await super().aevaluate(query, texts)  # the first pass: passages
            await asyncio.wait_for(web_started.wait(), timeout=5)  # strips: only finishes if web runs alongside
            return await super().aevaluate(query, texts)

    corrector = Corrector(evaluator=WaitingJudge({NAMESAKE: "unsure"}), web_search=SlowWeb(PAGES),
                          refiner=StripRefiner("fixed_num", window_words=3))
    result = await corrector.acorrect(QUERY, [NAMESAKE])
    assert result.action is Action.AMBIGUOUS and result.external


async def test_sync_correct_works_inside_a_running_event_loop():
    result = Corrector(web_search=InMemorySearch(PAGES)).correct(QUERY, [OFF])
    assert result.action is Action.INCORRECT and result.external


# -- bad input ------------------------------------------------------------------------------------
@pytest.mark.parametrize("query", ["", "   \n\t"])
def test_an_empty_question_cannot_be_searched_or_refined_against(query):
    with pytest.raises(ValueError, match="query must be a non-empty string"):
        Corrector(web_search=InMemorySearch(PAGES)).search(query)
    with pytest.raises(ValueError, match="query must be a non-empty string"):
        Corrector().refine(query, [ABOUT])


def test_non_string_query_and_passages_are_type_errors():
    with pytest.raises(TypeError, match="query must be a string"):
        Corrector().correct(None, [ABOUT])
    with pytest.raises(TypeError, match="passages must be a list"):
        Corrector().correct(QUERY, None)
    with pytest.raises(TypeError, match=r"passages\[1\] is int"):
        Corrector().correct(QUERY, [ABOUT, 3])


def test_empty_passage_list_takes_the_incorrect_path(mode):
    result = run(Corrector(web_search=InMemorySearch(PAGES)), QUERY, [], mode)
    assert result.action is Action.INCORRECT and result.scores == [] and result.external


def test_empty_passages_are_skipped_and_traced():
    result = Corrector().correct(QUERY, [None, "  ", ABOUT, Passage(None, id="x")])
    assert result.scores[:2] == [-1.0, -1.0] and result.scores[3] == -1.0 and result.scores[2] > 0
    skipped = result.trace.find("skip_passage")
    assert [s.index for s in skipped] == [0, 1, 3] and skipped[2].id == "x"
    assert result.action is Action.CORRECT


def test_huge_html_and_non_latin_passages(mode):
    huge = ("Henry Feilden was a politician. " * 40_000)[:1_200_000]
    passages = [huge, "<html><body><p>Henry <b>Feilden</b> was a <i>politician</i></p></body></html>",
                "亨利·费尔登 (Henry Feilden) 是英国保守党政治家。🎩🇬🇧", "🙂" * 1000]
    result = run(Corrector(), QUERY, passages, mode)
    assert len(result.scores) == 4 and result.knowledge
    assert result.trace.find("truncate_passage")[0].index == 0
    assert sum(len(s.text) for s in result.knowledge) < 20_000  # refined, not the whole megabyte


def test_bad_corrector_config():
    with pytest.raises(ValueError, match="on_web_failure"):
        Corrector(on_web_failure="ignore")
    with pytest.raises(TypeError, match="web_search must provide"):
        Corrector(web_search=object())
    with pytest.raises(ValueError, match="lie in"):
        Corrector(policy=ActionPolicy(2.0, 0.0))


def test_judge_only_scores_and_decides(mode):
    corrector = Corrector(web_search=InMemorySearch(PAGES))
    judged = corrector.judge(QUERY, [OFF, ABOUT, ""]) if mode == "sync" else asyncio.run(
        corrector.ajudge(QUERY, [OFF, ABOUT, ""]))
    full = corrector.correct(QUERY, [OFF, ABOUT, ""])
    assert judged.action is full.action is Action.CORRECT and judged.scores == full.scores
    assert judged.kept == [1] and judged.scored == [0, 1] and corrector.web_search.queries == []
    assert judged.trace.find("skip_passage")[0].index == 2


def test_refine_only_internal_and_web(mode):
    corrector = Corrector(refiner=StripRefiner("fixed_num", window_words=8))
    refine = corrector.refine if mode == "sync" else (lambda *a, **k: asyncio.run(corrector.arefine(*a, **k)))
    internal = refine(QUERY, [Passage(ABOUT, id="a"), Passage(OFF, id="b")])
    assert internal.strips and all(s.origin is Origin.INTERNAL for s in internal.strips)
    assert {s.source_id for s in internal.strips} == {"a"}  # the Eiffel passage scores below -0.5
    web = refine(QUERY, [Passage("Henry Feilden: a politician.", id="w", url="https://x")], web=True)
    assert [(s.origin, s.url) for s in web.strips] == [(Origin.WEB, "https://x")]
    assert internal.trace.find("refine_internal")[0].pieces >= 2


@pytest.mark.parametrize("passages,action", [([ABOUT], Action.CORRECT), ([OFF], Action.INCORRECT),
                                             ([ABOUT, OFF], Action.AMBIGUOUS)])
@pytest.mark.parametrize("on_web_failure,web", [("keep", True), ("keep", False), ("drop", False)])
def test_correct_is_exactly_judge_then_search_then_finish(mode, passages, action, on_web_failure, web):
    policy = ActionPolicy(0.9, -0.5) if action is Action.AMBIGUOUS else None
    corrector = Corrector(policy=policy, web_search=InMemorySearch(PAGES) if web else None,
                          on_web_failure=on_web_failure)
    if mode == "sync":
        judgment = corrector.judge(QUERY, passages)
        outcome = corrector.search(QUERY) if judgment.action is not Action.CORRECT else None
        sliced, whole = corrector.finish(judgment, outcome), corrector.correct(QUERY, passages)
    else:
        async def run():
            judgment = await corrector.ajudge(QUERY, passages)
            outcome = await corrector.asearch(QUERY) if judgment.action is not Action.CORRECT else None
            return await corrector.afinish(judgment, outcome), await corrector.acorrect(QUERY, passages)

        sliced, whole = asyncio.run(run())
    assert sliced.action is whole.action is action
    assert sliced.scores == whole.scores and sliced.knowledge == whole.knowledge
    assert sliced.fallbacks == whole.fallbacks and sliced.rewritten_query == whole.rewritten_query


def test_search_slice_says_why_there_is_no_web_knowledge():
    assert Corrector().search(QUERY) is None
    outcome = Corrector(web_search=InMemorySearch(PAGES)).search("zzzz qqqq")
    assert outcome.passages == [] and outcome.failure == "web search returned no results"
    assert outcome.query == "zzzz qqqq" and outcome.method == "keywords"


def test_a_spec_string_works_wherever_an_evaluator_is_accepted():
    from crag_shared import LexicalEvaluator

    corrector = Corrector(evaluator="lexical", fallback_evaluator="lexical")
    assert isinstance(corrector.evaluator, LexicalEvaluator) and isinstance(corrector.fallback_evaluator,
                                                                              LexicalEvaluator)
    assert corrector.correct("When did the Golden Gate Bridge open?",
                             ["The Golden Gate Bridge opened in May 1937."]).action is Action.CORRECT
    with pytest.raises(ValueError, match="unknown evaluator spec"):
        Corrector(evaluator="lexcial")
    with pytest.raises(TypeError, match="evaluator must be a RetrievalEvaluator or an evaluator spec"):
        Corrector(evaluator=42)
