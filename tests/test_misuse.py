"""Plug-ins returning the wrong thing, keys that must never show, and CLI misuse: each is either a clear
error naming the culprit, or the documented fallback, recorded."""

import json
import logging
import math
import pickle
import random
import traceback
from urllib.parse import quote, quote_plus

import pytest

from crag_shared import Action, ActionPolicy, Corrector, Passage, QueryRewriter, ReplaySearch, WebSearchError
from crag_shared.calibration import fit_thresholds
from crag_shared.calibration.eq2 import _Counter
from crag_shared.evaluators.base import Evaluation, RetrievalEvaluator
from crag_shared.tools.cli import main
from crag_shared.types import WebSearchResponse
from crag_shared.web.fetch import PageFetcher
from crag_shared.web.serpapi import SerpAPISearch
from crag_shared.web.serper import SerperSearch

QUERY = "What is Henry Feilden's occupation?"
GOOD = "Henry Feilden was an English Conservative Party politician."
OFF_TOPIC = "The Eiffel Tower stands in Paris."
KEY = "sk+test/SECRET+1=="
KEY_FORMS = [KEY, quote(KEY, safe=""), quote_plus(KEY), quote(KEY), "SECRET"]


class Returns(RetrievalEvaluator):
    """An evaluator plug-in whose evaluate() returns whatever it is given."""

    def __init__(self, make):
        self.make = make

    def evaluate(self, query, texts):
        return self.make(list(texts))


# -- plug-in outputs ----------------------------------------------------------------------------------
@pytest.mark.parametrize("make,error,words", [
    (lambda texts: Evaluation([0.5] * (len(texts) - 1)), ValueError, "1 scores for 2 texts"),
    (lambda texts: [0.5] * len(texts), TypeError, "returned list from evaluate()"),
    (lambda texts: None, TypeError, "returned NoneType"),
    (lambda texts: Evaluation(["high"] * len(texts)), TypeError, "a str score"),
    (lambda texts: Evaluation([None] * len(texts)), TypeError, "a NoneType score"),
    (lambda texts: Evaluation(None), ValueError, "returned NoneType for 2 texts"),
])
def test_evaluator_output_of_the_wrong_shape_names_the_evaluator(make, error, words):
    with pytest.raises(error, match="Returns") as caught:
        Corrector(Returns(make), fallback_evaluator=None).correct(QUERY, [GOOD, OFF_TOPIC])
    assert words in str(caught.value)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_scores_that_are_not_finite_take_the_fallback_evaluator_recorded_and_logged(bad, caplog):
    with caplog.at_level(logging.WARNING, logger="crag"):
        result = Corrector(Returns(lambda t: Evaluation([0.9, bad][:len(t)]))).correct(QUERY, [GOOD, OFF_TOPIC])
    assert f"1 of 2 scores were not finite numbers (e.g. {bad:g})" in result.fallbacks[0].reason
    assert result.fallbacks[0].applied.startswith("scored with lexical")
    assert any("not finite" in record.getMessage() for record in caplog.records)
    assert result.action is Action.CORRECT and all(math.isfinite(s) for s in result.scores)
    assert [s.source_index for s in result.knowledge] == [0]  # the lexical judge's verdict, not +inf's
    with pytest.raises(ValueError, match="not finite"):
        Corrector(Returns(lambda t: Evaluation([bad] * len(t))), fallback_evaluator=None).correct(QUERY, [OFF_TOPIC])


@pytest.mark.parametrize("bad", [5.0, -7.0])
def test_scores_outside_the_range_are_clipped_and_recorded(bad):
    result = Corrector(Returns(lambda t: Evaluation([bad] * len(t)))).correct(QUERY, [GOOD])
    assert result.scores == [max(-1.0, min(1.0, bad))]
    assert "outside [-1, 1]" in result.fallbacks[0].reason and result.fallbacks[0].applied == "clipped them to [-1, 1]"


def test_rewrite_llm_returning_a_non_string_is_named(scripted_llm):
    corrector = Corrector(rewriter=QueryRewriter(scripted_llm(fn=lambda prompt: 42)),
                          web_search=ReplaySearch.__new__(ReplaySearch))
    with pytest.raises(TypeError, match=r"rewrite LLM \(ScriptedLLM\) returned int"):
        corrector.correct(QUERY, [OFF_TOPIC])


@pytest.mark.parametrize("reply,why", [("", "was empty"), ("x" * 300, "too long"),
                                       ("text text text text text text", "degenerate")])
def test_unusable_llm_rewrites_fall_back_to_keywords(scripted_llm, reply, why):
    rewrite = QueryRewriter(scripted_llm(fn=lambda prompt: reply)).rewrite(QUERY)
    assert rewrite.method == "keywords" and why in rewrite.note and "Henry Feilden" in rewrite.query


class OddSearch:
    def __init__(self, answer):
        self.answer = answer

    def search(self, query, top_k=5):
        return self.answer

    async def asearch(self, query, top_k=5):
        return self.answer


@pytest.mark.parametrize("answer", [None, {"results": []}, WebSearchResponse(results=[{"url": "x"}])])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_web_search_returning_the_wrong_type_names_the_provider(answer, mode):
    corrector = Corrector(web_search=OddSearch(answer))
    with pytest.raises(TypeError, match="web search provider OddSearch"):
        if mode == "sync":
            corrector.correct(QUERY, [OFF_TOPIC])
        else:
            import asyncio

            asyncio.run(corrector.acorrect(QUERY, [OFF_TOPIC]))


def test_passage_fields_of_the_wrong_type_are_named():
    with pytest.raises(TypeError, match=r"passages\[0\].title is int"):
        Corrector(score_titles=True).correct(QUERY, [Passage(GOOD, title=123)])


@pytest.mark.parametrize("content", ['{"upper": null, "lower": 0}', '{"upper": [1], "lower": 0}', "[0.5, 0.1]",
                                     '{"upper": true, "lower": 0}', "[" * 100_000 + "]" * 100_000, "not json"])
def test_bad_thresholds_files_are_named(tmp_path, content):
    path = tmp_path / "thresholds.json"
    path.write_text(content)
    with pytest.raises(ValueError, match="thresholds"):
        ActionPolicy.load(path)


def test_replay_search_rejects_a_non_string_query(tmp_path):
    path = tmp_path / "web.jsonl"
    path.write_text(json.dumps({"query": "q", "results": [{"title": "t", "url": "u", "text": "x"}]}) + "\n")
    with pytest.raises(TypeError, match="search query must be a string, got int"):
        ReplaySearch(path).search(7)


# -- calibration ------------------------------------------------------------------------------------
def test_calibration_finds_the_brute_force_optimum():
    rng = random.Random(3)
    scores = [[rng.uniform(-1, 1) for _ in range(rng.randint(1, 5))] for _ in range(300)]
    labels = [[rng.random() < 0.3 + 0.4 * s for s in row] for row in scores]
    for alpha in (0.0, 1.0, 2.5):
        fitted = fit_thresholds(scores, labels, alpha=alpha, steps=41)
        counter = _Counter([max(r) for r in scores], [any(y) for y in labels])
        brute = max(counter.objective(u, lo, alpha)[0] for u in fitted.grid for lo in fitted.grid if lo <= u)
        assert fitted.objective == pytest.approx(brute, abs=1e-9)


@pytest.mark.parametrize("steps", [1, 0, 5000, 2.5])
def test_calibration_steps_are_bounded(steps):
    with pytest.raises(ValueError, match="steps"):
        fit_thresholds([[0.1]], [[True]], steps=steps)


# -- secrets ----------------------------------------------------------------------------------------
def _assert_no_key(text: str) -> None:
    for form in KEY_FORMS:
        assert form not in text, form


@pytest.mark.parametrize("base", ["{url}/nothing-here", "http://127.0.0.1:9"])
def test_errors_and_traces_scrub_the_key_in_every_encoding(crag_fake_web, base):
    search = SerpAPISearch(api_key=KEY, base_url=base.format(url=crag_fake_web.url), timeout=2,
                           fetcher=PageFetcher(allow_private_addresses=["127.0.0.1/32"]))
    with pytest.raises(WebSearchError) as caught:
        search.search("anything")
    _assert_no_key("".join(traceback.format_exception(caught.value)))
    result = Corrector(web_search=search).correct(QUERY, [OFF_TOPIC])
    _assert_no_key(json.dumps(result.trace.to_dict()) + repr(result.fallbacks))


def test_urllib3_debug_logs_mask_the_key(crag_fake_web, caplog):
    crag_fake_web.add("p", "Page", [GOOD])
    crag_fake_web.api_key = KEY
    search = SerpAPISearch(api_key=KEY, base_url=crag_fake_web.url,
                           fetcher=PageFetcher(allow_private_addresses=["127.0.0.1/32"]))
    with caplog.at_level(logging.DEBUG):
        assert search.search("anything").results
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "api_key=***" in logged
    _assert_no_key(logged)


@pytest.mark.parametrize("provider,env", [(SerpAPISearch, "SERPAPI_API_KEY"), (SerperSearch, "SERPER_API_KEY")])
def test_keys_stay_out_of_vars_and_pickles(monkeypatch, provider, env):
    monkeypatch.setenv(env, KEY)
    search = provider()
    _assert_no_key(repr(vars(search)) + repr(search))
    data = pickle.dumps(search)
    _assert_no_key(data.decode("latin-1"))
    assert pickle.loads(data)._api_key.reveal() == KEY  # read again from the environment
    monkeypatch.delenv(env)
    with pytest.raises(ValueError, match=env):
        pickle.loads(data)
    with pytest.raises(TypeError, match=f"set {env} instead"):
        pickle.dumps(provider(api_key=KEY))


def test_a_pickled_postprocessor_keeps_its_web_search_without_the_key(monkeypatch):
    from crag_llamaindex import CRAGPostprocessor

    monkeypatch.setenv("SERPAPI_API_KEY", KEY)
    data = pickle.dumps(CRAGPostprocessor(web_search=SerpAPISearch()))
    _assert_no_key(data.decode("latin-1"))
    assert isinstance(pickle.loads(data).corrector.web_search, SerpAPISearch)
    with pytest.raises(TypeError, match="set SERPAPI_API_KEY instead"):
        pickle.dumps(CRAGPostprocessor(web_search=SerpAPISearch(api_key=KEY)))


# -- CLI ------------------------------------------------------------------------------------------------
@pytest.fixture
def files(tmp_path):
    (tmp_path / "bad.jsonl").write_text('{"query": "q", "passage": "p", "label": 1}\n{not json\n')
    (tmp_path / "list.jsonl").write_text("[1, 2]\n")
    (tmp_path / "good.jsonl").write_text('{"query": "q", "passage": "p", "label": 1}\n')
    (tmp_path / "nested.json").write_text("[" * 100_000 + "]" * 100_000)
    return tmp_path


@pytest.mark.parametrize("argv,words", [
    ("calibrate --data {d}/missing.jsonl", "no such file"),
    ("calibrate --data {d}", "no such file"),
    ("calibrate --data {d}/bad.jsonl --plot ''", "bad.jsonl:2"),
    ("calibrate --data {d}/list.jsonl --plot ''", "JSON object"),
    ("calibrate --data {d}/good.jsonl --evaluator bogus --plot ''", "unknown evaluator spec 'bogus'"),
    ("calibrate --data {d}/good.jsonl --steps 1", "--steps"),
    ("calibrate --data {d}/good.jsonl --steps 0", "--steps"),
    ("calibrate --data {d}/good.jsonl --steps 6000", "--steps"),
    ("calibrate --data {d}/good.jsonl --alpha nan", "not a finite number"),
    ("calibrate --data {d}/good.jsonl --alpha -1", "--alpha"),
    ("calibrate --data {d}/good.jsonl --out {d}/no/dir/t.json", "does not exist"),
    ("calibrate --data {d}/good.jsonl --plot {d}/no/dir/t.png", "does not exist"),
    ("crag-bench web --pages 0", "--pages"),
    ("crag-bench web --delay -1", "--delay"),
    ("crag-bench web --repeats 0", "--repeats"),
    ("crag-bench accuracy --data {d}/missing.jsonl", "no such file"),
    ("crag-bench accuracy --data {d}/good.jsonl --thresholds {d}/nested.json", "not a thresholds file"),
    ("crag-bench throughput --bench-dir {d}", "no benchmark data"),
    ("train-evaluator --data {d}/good.jsonl --base-model x --out {d}/m --batch-size 0", "--batch-size"),
    ("export-onnx {d}/missing {d}/no/dir/out", "does not exist"),
    ("bogus", "invalid choice"),
    ("bench web --pages 3", "run `crag-bench web --pages 3`"),  # the benchmarks are crag-bench's, outside the wheels
    ("calibrate --data {d}/good.jsonl --evaluator llm --plot ''", "needs an LLM"),
])
def test_user_errors_are_one_line_and_exit_2(files, capsys, argv, words):
    import shlex

    from benchmarks.cli import main as bench_main

    words_given = shlex.split(argv.format(d=files))
    command = bench_main if words_given[0] == "crag-bench" else main
    assert command(words_given[1:] if command is bench_main else words_given) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("crag: error:") and words in lines[0], captured.err
    assert "Traceback" not in captured.err + captured.out


def test_calibrate_without_matplotlib_says_so(files, capsys, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    assert main(["calibrate", "--data", str(files / "good.jsonl"), "--out", str(files / "t.json")]) == 2
    assert "--plot needs matplotlib" in capsys.readouterr().err


@pytest.mark.parametrize("settings,words", [
    ({"strip_top_k": "3"}, "strip_top_k\n  Input should be a valid integer"),
    ({"web_top_k": 0}, "web_top_k\n  Input should be greater than or equal to 1"),
    ({"upper": 2}, "upper\n  Input should be less than or equal to 1"),
    ({"lower": True}, "lower\n  Input should be a valid number"),
    ({"strip_threshold": None}, "strip_threshold\n  Input should be a valid number"),
    ({"refine_mode": "sentences"}, "refine_mode\n  Input should be 'fixed_num', 'excerption' or 'selection'"),
    ({"on_web_failure": "ignore"}, "on_web_failure\n  Input should be 'keep' or 'drop'"),
    ({"score_titles": "yes"}, "score_titles\n  Input should be a valid boolean"),
    ({"evaluator": 3}, "evaluator\n  Input should be a valid string"),
    ({"evaluator_options": {"model": object()}}, "evaluator_options.model\n  input was not a valid JSON value"),
])
def test_a_bad_setting_fails_where_it_is_given_naming_it(settings, words):
    from crag_shared import CRAGConfig

    with pytest.raises(ValueError) as caught:
        CRAGConfig(**settings)
    assert words in str(caught.value)
    with pytest.raises(ValueError, match=next(iter(settings))):
        CRAGConfig.from_dict(settings)  # what every adapter's deserialization goes through


class StopIterationEvaluator(RetrievalEvaluator):
    """A plug-in whose evaluate raises StopIteration (an exhausted iterator inside it)."""

    def evaluate(self, query, texts):
        raise StopIteration


def test_a_stop_iteration_from_a_sync_plug_in_takes_the_fallback_async_too():
    import asyncio

    from crag_shared import FunctionLLM

    corrector = Corrector(evaluator=StopIterationEvaluator())
    passages = ["Paris is the capital of France."]
    alone = corrector.correct("What is the capital of France?", passages)
    together = asyncio.run(asyncio.wait_for(corrector.acorrect("What is the capital of France?", passages), 10))
    assert alone.action == together.action and together.scores == alone.scores
    assert any("StopIteration" in f.reason for f in together.fallbacks)

    def exhausted(prompt):
        raise StopIteration

    rewriter = QueryRewriter(FunctionLLM(exhausted))
    rewrite = asyncio.run(asyncio.wait_for(rewriter.arewrite("What is the capital of France?"), 10))
    assert rewrite.method == "keywords" and "StopIteration" in rewrite.note


class ShortBatchEvaluator(RetrievalEvaluator):
    """A plug-in whose evaluate_batch drops the last request's result (or returns None)."""

    def __init__(self, none=False):
        self.none = none

    def evaluate(self, query, texts):
        return Evaluation([0.9 for _ in texts])

    def evaluate_batch(self, requests):
        return None if self.none else [self.evaluate(q, t) for q, t in requests][:-1]


@pytest.mark.parametrize("none", [False, True])
def test_a_batch_with_the_wrong_number_of_results_loses_no_query(none):
    items = [(f"question {i} about Paris", ["Paris is the capital of France."]) for i in range(4)]
    results = Corrector(evaluator=ShortBatchEvaluator(none)).correct_many(items)
    assert len(results) == 4 and all(not hasattr(r, "error") for r in results)
    assert all(any("evaluate_batch" in f.reason or "NoneType" in f.reason for f in r.fallbacks) for r in results)
