"""Each passage and strip reaches the model once per query; the benchmarks run on tiny data."""

import io

import pytest

from crag_shared import Corrector, CrossEncoderEvaluator, Passage, StripRefiner, T5Evaluator


def test_each_passage_and_strip_is_scored_once_per_query(tiny_bert):
    evaluator = CrossEncoderEvaluator(str(tiny_bert), batch_size=4)
    rows = []
    evaluator.model.register_forward_hook(lambda m, args, kwargs, out: rows.append(kwargs["input_ids"].shape[0]),
                                          with_kwargs=True)
    passages = ["paris is the capital of france. the eiffel tower stands in paris. it was built in 1889.",
                "paris is the capital of france. the eiffel tower stands in paris. it was built in 1889.",
                "marie curie won the nobel prize twice. she was a physicist. she was also a chemist.",
                "henry feilden was a politician."]
    corrector = Corrector(evaluator=evaluator, refiner=StripRefiner("excerption", strip_words=6),
                          policy=__import__("crag_shared").ActionPolicy(-1.0, -1.0))  # always Correct
    result = corrector.correct("what is the capital of france", passages)
    pieces = result.trace.find("refine_internal")[0].pieces
    distinct_strips = {s for s in _strip_texts(corrector, passages)}
    expected = len(set(passages)) + len(distinct_strips - set(passages))
    assert sum(rows) == expected  # 3 distinct passages + their distinct strips; duplicates and cached strips: 0
    assert pieces > len(distinct_strips - set(passages))  # some pieces were cache hits


def _strip_texts(corrector, passages):
    return [p.text for p in corrector.refiner.decompose(list(enumerate(passages)))]


@pytest.mark.slow
def test_recall_bench_runs_on_a_few_questions(bench_dir):
    from benchmarks.recall import has_answer_word, recorded_pages, run

    assert has_answer_word("He was a politician.", ["politician"])
    assert not has_answer_word("apolitician", ["politician"])
    assert recorded_pages("A: one ; B: two ; A: three") == {"A": ["one", "three"], "B": ["two"]}
    out = io.StringIO()
    results = run(out, bench_dir, ["lexical"], queries=5)
    assert 0 <= results["lexical"]["recall"] <= 1 and results["plain"]["words"] > results["lexical"]["words"]
    assert "of plain RAG" in out.getvalue()


@pytest.mark.slow
def test_abstain_bench_every_entry_point_hands_the_generator_the_same_text(bench_dir):
    pytest.importorskip("haystack")
    pytest.importorskip("llama_index.core")
    from benchmarks.abstain import ENTRY_POINTS, run
    from benchmarks.recall import reached

    assert reached(["x The Eiffel Tower stands in Paris, France. y"], [Passage("The Eiffel Tower stands in Paris, "
                                                                               "France. It is tall.")])
    assert not reached(["The Eiffel Tower"], [Passage("The Eiffel Tower stands in Paris, France.")])
    out = io.StringIO()
    results = run(out, bench_dir, queries=20)
    for label, figures in results.items():
        points = figures["entry_points"]
        assert tuple(points) == ENTRY_POINTS and len({tuple(c.values()) for c in points.values()}) == 1, label
        for counts in points.values():  # no web: what is not abstained on is passage text sent to the generator
            assert counts["passage_text_reached"] + counts["abstained"] == figures["questions"]
    outside, inside = results["out of corpus"]["entry_points"]["core"], results["in corpus"]["entry_points"]["core"]
    assert outside["abstained"] >= 18 and outside["answer_reached"] == 0
    assert inside["abstained_with_relevant"] == 0 and inside["answer_reached"] >= 15
    assert "haystack build_crag_pipeline" in out.getvalue()


@pytest.mark.slow
def test_throughput_helpers_on_tiny_models(bench_dir, tiny_bert, tiny_t5):
    from benchmarks.throughput import (
        decision_latency,
        llm_calls_per_query,
        load_popqa,
        official_pairs_per_second,
        ours_pairs_per_second,
    )
    from crag_shared import T5Evaluator

    data = load_popqa(bench_dir, 2)
    for evaluator in (CrossEncoderEvaluator(str(tiny_bert)), T5Evaluator(str(tiny_t5))):
        assert official_pairs_per_second(evaluator, data[:1]) > 0 and ours_pairs_per_second(evaluator, data) > 0
        assert decision_latency(evaluator, data)["p50_ms"] > 0
    assert llm_calls_per_query(data)["judge"] == 1.0


def test_a_strip_differing_from_its_passage_only_in_whitespace_is_not_scored_again(tiny_bert):
    evaluator = CrossEncoderEvaluator(str(tiny_bert))
    texts = []
    evaluator.model.register_forward_hook(lambda m, args, kwargs, out: texts.append(kwargs["input_ids"].shape[0]),
                                          with_kwargs=True)
    passage = "  paris is the capital of france.\n it has the eiffel tower. "
    corrector = Corrector(evaluator=evaluator, policy=__import__("crag_shared").ActionPolicy(-1.0, -1.0))
    result = corrector.correct("what is the capital of france", [passage])
    assert [s.text for s in result.knowledge] == [passage.strip()]  # one strip: the passage, trimmed
    assert sum(texts) == 1 and result.knowledge[0].score == result.scores[0]


@pytest.mark.slow
def test_device_rows_run_on_tiny_models(bench_dir, tiny_bert, tiny_t5):
    import io

    from benchmarks.device import device_rows
    from benchmarks.throughput import load_popqa

    out = io.StringIO()
    models = {"bert": (CrossEncoderEvaluator, str(tiny_bert)), "t5": (T5Evaluator, str(tiny_t5))}
    rows = device_rows(out, load_popqa(bench_dir, 3), "cpu", models, baseline_queries=1, rounds=1)
    for name in models:
        row = rows[name]
        assert row["paper_pairs_per_s"] > 0 and row["defaults_speedup"] > 0 and row["first_pass_slowdown"] > 0
        assert row["batching"][2] == 1  # exact lengths on a CPU
    assert "paper-style" in out.getvalue() and "warm_buckets=True" in out.getvalue()


def test_bench_throughput_refuses_a_device_this_machine_lacks(bench_dir, capsys):
    import torch

    from benchmarks.cli import main

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert main(["throughput", "--bench-dir", str(bench_dir), "--device", "cuda"]) == 2
    assert "no CUDA GPU" in capsys.readouterr().err


@pytest.mark.slow
def test_haystack_bench_counts_one_query_embedding_per_query(bench_dir):
    pytest.importorskip("haystack")
    from benchmarks.haystack import run

    figures = run(io.StringIO(), bench_dir, queries=6)
    assert figures["text_embedder_calls_per_query"] == 1.0
    assert figures["router_alone"]["p50_ms"] > 0 and figures["router_pipeline"]["p50_ms"] > 0


@pytest.mark.slow
def test_bounds_bench_measures_every_case_through_the_cli(capsys):
    from benchmarks.cli import main

    assert main(["bounds", "--queries", "40", "--timeout", "1", "--text-scale", "0.02", "--rounds", "2"]) == 0
    out = capsys.readouterr().out
    for case in ("3 MB of <p>x</p>", "gzip, gzip", "4 MB internal passage", "serpapi: search answer trickle_headers",
                 "page that answers after 30 s", "reading: full-name check", "lexical best sentence",
                 "Chinese blend", "German blend", "100,000 passages", "default lexical judge against itself"):
        assert case in out
    assert "serpapi  web results for 40/40" in out and "serper   web results for 40/40" in out



@pytest.mark.slow
def test_every_web_source_gives_the_replay_knowledge_of_popqa(bench_dir):
    import io

    from benchmarks.web_sources import run

    figures = run(io.StringIO(), bench_dir, queries=20)
    assert {"SearXNG", "Haystack web component (ComponentWebSearch)", "Brave"} <= figures.keys()
    reference = figures["replay (reference)"]
    for name, row in figures.items():
        assert row["failed_pages"] == 0, (name, row)  # every page arrived: no time bound is reachable on loopback
        assert row["same_knowledge"] >= 0.9, (name, row)
        assert row["recall"] == reference["recall"], (name, row)
    # the sources that fetch pages share the fetcher and the extraction, so they differ from the replay on
    # the same questions (18 of 20 the same, from the content alone): one figure for all of them
    fetching = {row["same_knowledge"] for name, row in figures.items()
                if name != "replay (reference)" and "page text it returns" not in name}
    assert len(fetching) == 1, figures


@pytest.mark.slow
def test_the_fitted_blend_keeps_answers_first_and_users_get_the_fitted_figures(tmp_path):
    from benchmarks.near_miss import figures
    from benchmarks.reader.fit import KEEP, fit_blend, tune_sets, unjudged
    from crag_shared.evaluators import LexicalEvaluator, load_combination, save_combination

    sets = tune_sets(None, names=("docs",))
    # any judge whose spec rebuilds it stands in for the reader here: what is tested is the fit, not the model
    blend = fit_blend(LexicalEvaluator(), sets)
    fitted = blend.report["figures"]["docs"]
    assert blend.thresholds[0] == 0.0 and blend.thresholds[1] <= 0.0
    assert fitted[1] >= KEEP * unjudged(sets, blend)["docs"]
    path = tmp_path / "blend.json"
    save_combination(blend, path)
    as_users_run_it = Corrector(load_combination(path))  # its own thresholds, the default strip threshold
    assert list(figures(as_users_run_it, sets, "tune")["docs"]) == fitted
