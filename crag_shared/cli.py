"""The `crag` command: demo, calibrate, train-evaluator and bench subcommands."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path


def _demo(args: argparse.Namespace) -> int:
    from .demo import run

    return run(sys.stdout)


def _bench_web(args: argparse.Namespace) -> int:
    from .bench.web import run

    figures = run(sys.stdout, pages=args.pages, delay=args.delay, repeats=args.repeats)
    return 0 if figures["ours_over_t"] <= 1.3 else 1


def _load(args: argparse.Namespace, path: str | None = None) -> list:
    """The labelled pairs of `path` (default `--data`, kept to `--split`), read with `--titles`; a bad or
    empty file exits with its error."""
    from .data import load_pairs

    try:
        return load_pairs(path or args.data, titles=args.titles, split=None if path else args.split)
    except ValueError as error:
        raise SystemExit(str(error)) from error


def _train(args: argparse.Namespace) -> int:
    from .data import split_by_query
    from .train import TrainConfig, train_evaluator

    pairs = _load(args)
    train, validation = split_by_query(pairs, args.validation)
    if args.validation_data:
        validation = _load(args, args.validation_data)
    config = TrainConfig(base_model=args.base_model, out=args.out, kind=args.kind, pooling=args.pooling,
                         epochs=args.epochs, max_steps=args.max_steps, batch_size=args.batch_size, lr=args.lr,
                         head_lr=args.head_lr, max_length=args.max_length, eval_every=args.eval_every,
                         eval_limit=args.eval_limit, patience=args.patience, listwise=args.listwise,
                         temperature=args.temperature, seed=args.seed, threads=args.threads)
    print(f"training on {len(train)} pairs, validating on {len(validation)} (split by query)")
    report = train_evaluator(train, validation, config)
    print(f"best validation AUROC {report.best_auroc:.4f} at step {report.best_step} of {report.steps}; "
          f"{report.seconds:.0f} s; saved to {args.out}")
    return 0


def _bench_dir(value: str | None) -> Path:
    """The bench data: --bench-dir, else ../shared/bench beside the checkout or the working directory."""
    candidates = [Path(value)] if value else [Path.cwd() / "../shared/bench",
                                              Path(__file__).resolve().parents[2] / "shared" / "bench"]
    for candidate in candidates:
        if (candidate / "popqa_ctxs.jsonl").exists():
            return candidate.resolve()
    raise SystemExit(f"no benchmark data found (looked in {', '.join(map(str, candidates))}); pass --bench-dir")


def _bench_throughput(args: argparse.Namespace) -> int:
    from .bench.throughput import run

    run(sys.stdout, _bench_dir(args.bench_dir), queries=args.queries, baseline_queries=args.baseline_queries,
        rounds=args.rounds)
    return 0


def _bench_recall(args: argparse.Namespace) -> int:
    from .bench.recall import run

    run(sys.stdout, _bench_dir(args.bench_dir), args.evaluator or ["lexical"], queries=args.queries)
    return 0


def _bench_accuracy(args: argparse.Namespace) -> int:
    from .bench.accuracy import run

    run(sys.stdout, args.data, args.evaluator or ["lexical"], thresholds=args.thresholds, kfold=args.kfold,
        base_model=args.base_model, train_steps=args.train_steps, split=args.split, titles=args.titles)
    return 0


def _calibrate(args: argparse.Namespace) -> int:
    from .calibrate import score_by_query, write_outputs
    from .evaluators import evaluator_from_spec
    from .policy import calibrate

    pairs = _load(args)
    scores, labels = score_by_query(evaluator_from_spec(args.evaluator), pairs)
    result = calibrate(scores, labels, alpha=args.alpha, steps=args.steps)
    summary = write_outputs(result, args.evaluator, scores, labels, args.out, args.plot)
    print(f"thresholds: upper {summary['upper']:+.2f}, lower {summary['lower']:+.2f} (Eq. 2 = "
          f"{summary['objective']:.3f}, alpha {args.alpha:g}) on {summary['queries']} queries; "
          f"actions {summary['actions']}; judgment accuracy {summary['accuracy']:.3f}\n"
          f"written: {args.out}" + (f", {args.plot}" if args.plot else ""))
    return 0


def _export_onnx(args: argparse.Namespace) -> int:
    from .evaluators.onnx import export_onnx

    target = export_onnx(args.model, args.out, quantize=not args.float)
    print(f"exported {args.model} to {target} ({'float32' if args.float else 'int8 weights'}); "
          f"use it as OnnxCrossEncoderEvaluator({str(target)!r}) or evaluator='onnx:{target}'")
    return 0


def _add_titles(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--titles", action="store_true",
                        help="read passages as 'title: text', as the Corrector scores them with score_titles=True")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="crag", description="Corrective RAG tools")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="run CRAG offline on a tiny corpus, showing all three actions")
    demo.set_defaults(func=_demo)

    train = commands.add_parser("train-evaluator", help="fine-tune a T5 or BERT-style evaluator on labelled pairs")
    train.add_argument("--data", required=True, help="JSONL pairs (query/passage/label) or PopQA records")
    train.add_argument("--base-model", required=True, help="local directory or hub id to start from")
    train.add_argument("--out", required=True, help="where to save_pretrained the best model")
    train.add_argument("--kind", choices=["bert", "t5"], default="bert")
    train.add_argument("--pooling", choices=["pair", "mean", "cls"], default="pair", help="BERT-style head input")
    train.add_argument("--validation", type=float, default=0.15, help="share of queries held out (no split column)")
    train.add_argument("--split", help="train only on pairs whose split column has this value (e.g. train); "
                                       "validation is then held out from them by query, keeping the rest unseen")
    train.add_argument("--validation-data", help="a separate JSONL file to validate on instead")
    train.add_argument("--epochs", type=float, default=1.0)
    train.add_argument("--max-steps", type=int)
    train.add_argument("--batch-size", type=int, default=16)
    train.add_argument("--lr", type=float, default=5e-5)
    train.add_argument("--head-lr", type=float, default=1e-3)
    train.add_argument("--max-length", type=int, default=256)
    train.add_argument("--eval-every", type=int, default=100)
    train.add_argument("--eval-limit", type=int, default=1000)
    train.add_argument("--patience", type=int, default=4)
    train.add_argument("--listwise", type=float, default=0.0,
                       help="weight of a per-question softmax ranking loss added to the MSE "
                            "(batches then hold whole questions)")
    train.add_argument("--temperature", type=float, default=0.3, help="softmax temperature of --listwise")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--threads", type=int)
    _add_titles(train)
    train.set_defaults(func=_train)

    export = commands.add_parser("export-onnx", help="export a cross-encoder for ONNX Runtime (fused, int8)")
    export.add_argument("model", help="checkpoint directory or hub id (any CrossEncoderEvaluator model)")
    export.add_argument("out", help="directory to write; loading it needs onnxruntime, not torch")
    export.add_argument("--float", action="store_true", help="keep float32 weights instead of int8")
    export.set_defaults(func=_export_onnx)

    bench = commands.add_parser("bench", help="benchmarks (figures measured within one run)")
    benches = bench.add_subparsers(dest="bench", required=True)
    web = benches.add_parser("web", help="concurrent page fetching vs sequential, loopback pages with latency")
    web.add_argument("--pages", type=int, default=5)
    web.add_argument("--delay", type=float, default=0.3, help="server delay per page, seconds (t)")
    web.add_argument("--repeats", type=int, default=3)
    web.set_defaults(func=_bench_web)
    throughput = benches.add_parser("throughput", help="evaluator pairs/s vs the official code's way; latency")
    throughput.add_argument("--bench-dir")
    throughput.add_argument("--queries", type=int, default=20)
    throughput.add_argument("--baseline-queries", type=int, default=6)
    throughput.add_argument("--rounds", type=int, default=3, help="interleaved rounds; the best is reported")
    throughput.set_defaults(func=_bench_throughput)
    recall = benches.add_parser("recall", help="answer recall and words handed over: plain RAG vs CRAG")
    recall.add_argument("--bench-dir")
    recall.add_argument("--evaluator", action="append", help="evaluator spec (repeatable); default lexical")
    recall.add_argument("--queries", type=int, default=100)
    recall.set_defaults(func=_bench_recall)
    accuracy = benches.add_parser("accuracy", help="pair AUROC/accuracy/F1 and query-level judgment accuracy")
    accuracy.add_argument("--data", required=True, help="JSONL pairs or PopQA records")
    accuracy.add_argument("--evaluator", action="append", help="evaluator spec (repeatable); default lexical")
    accuracy.add_argument("--thresholds", help="thresholds JSON from crag calibrate")
    accuracy.add_argument("--kfold", type=int, default=0, help="also train and test k folds by question")
    accuracy.add_argument("--base-model", help="model to train from in --kfold")
    accuracy.add_argument("--train-steps", type=int, default=100)
    accuracy.add_argument("--split", help="only pairs whose split column has this value (e.g. eval)")
    _add_titles(accuracy)
    accuracy.set_defaults(func=_bench_accuracy)

    cal = commands.add_parser("calibrate", help="fit the action thresholds to labelled data (paper Eq. 2)")
    cal.add_argument("--data", required=True, help="JSONL pairs (query/passage/label) or PopQA records")
    cal.add_argument("--evaluator", default="lexical", help="lexical | t5:PATH | cross-encoder:PATH | onnx:PATH")
    cal.add_argument("--alpha", type=float, default=1.0, help="false-positive penalty of Eq. 2")
    cal.add_argument("--split", help="only pairs whose split column has this value (e.g. eval)")
    cal.add_argument("--steps", type=int, default=201, help="grid points over [-1, 1]")
    cal.add_argument("--out", default="thresholds.json")
    cal.add_argument("--plot", default="thresholds.png", help="PNG path ('' for none)")
    _add_titles(cal)
    cal.set_defaults(func=_calibrate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
