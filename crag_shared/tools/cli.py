"""The `crag` command: demo, calibrate, train-evaluator and bench subcommands.

Every user error (a bad argument, a missing or malformed file, a missing optional dependency) ends with
one line on stderr saying what is wrong, and exit status 2; a traceback means a bug in crag.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from ..evaluators.spec import EVALUATOR_SPECS
from ..web.spec import WEB_SPECS
from .calibrate import MAX_STEPS


class UsageError(Exception):
    """A mistake in how crag was called; printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def _number(kind: Callable[[str], float], minimum: float | None = None, maximum: float | None = None,
            above: float | None = None) -> Callable[[str], float]:
    """An argparse type: a finite number within bounds."""
    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {'an integer' if kind is int else 'a number'}"
                                             ) from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum) or \
                (above is not None and value <= above):
            bounds = [f">= {minimum:g}" if minimum is not None else "", f"> {above:g}" if above is not None else "",
                      f"<= {maximum:g}" if maximum is not None else ""]
            raise argparse.ArgumentTypeError(f"{text} must be {' and '.join(b for b in bounds if b)}")
        return value

    return parse


POSITIVE_INT = _number(int, minimum=1)
NON_NEGATIVE = _number(float, minimum=0)
#: The evaluator specs a command line can build (the LLM judge needs an application's LLM).
EVALUATOR_HELP = "evaluator spec: " + " | ".join(
    g.replace("[:", ":").rstrip("]") for g in EVALUATOR_SPECS.grammar() if not g.startswith(("llm", "custom")))
POSITIVE = _number(float, above=0)


def _writable(path: str | None, option: str) -> None:
    """An output path must lie in an existing directory; said before any work is done."""
    if path and not Path(path).expanduser().resolve().parent.is_dir():
        raise UsageError(f"{option} {path}: the directory {Path(path).parent} does not exist")


def _readable(path: str | None, option: str) -> None:
    if path and not Path(path).is_file():
        raise UsageError(f"{option} {path}: no such file")


def _needs(module: str, hint: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise UsageError(hint)


def _demo(args: argparse.Namespace) -> int:
    from ..demo import run

    return run(sys.stdout)


def _bench_web(args: argparse.Namespace) -> int:
    from .bench.web import run

    figures = run(sys.stdout, pages=args.pages, delay=args.delay, repeats=args.repeats)
    return 0 if figures["ours_over_t"] <= 1.3 else 1


def _load(args: argparse.Namespace, path: str | None = None) -> list:
    """The labelled pairs of `path` (default `--data`, kept to `--split`), read with `--titles`; a bad or
    empty file exits with its error."""
    from .data import load_pairs

    _readable(path or args.data, "--data")
    return load_pairs(path or args.data, titles=args.titles, split=None if path else args.split)


def _train(args: argparse.Namespace) -> int:
    from .data import split_by_query
    from .train import TrainConfig, train_evaluator

    _needs("torch", "train-evaluator needs torch and transformers: pip install 'crag-shared[torch]'")
    _readable(args.validation_data, "--validation-data")
    _writable(args.out, "--out")
    pairs = _load(args)
    train, validation = split_by_query(pairs, args.validation)
    if args.validation_data:
        validation = _load(args, args.validation_data)
    config = TrainConfig(base_model=args.base_model, out=args.out, kind=args.kind, pooling=args.pooling,
                         epochs=args.epochs, max_steps=args.max_steps, batch_size=args.batch_size, lr=args.lr,
                         head_lr=args.head_lr, max_length=args.max_length, eval_every=args.eval_every,
                         eval_limit=args.eval_limit, patience=args.patience, listwise=args.listwise,
                         temperature=args.temperature, seed=args.seed, threads=args.threads, device=args.device)
    print(f"training on {len(train)} pairs, validating on {len(validation)} (split by query)")
    report = train_evaluator(train, validation, config)
    print(f"best validation AUROC {report.best_auroc:.4f} at step {report.best_step} of {report.steps}; "
          f"{report.seconds:.0f} s; saved to {args.out}")
    return 0


def _bench_dir(value: str | None) -> Path:
    """The bench data: --bench-dir, else ../shared/bench beside the checkout or the working directory."""
    candidates = [Path(value)] if value else [Path.cwd() / "../shared/bench",
                                              Path(__file__).resolve().parents[3] / "shared" / "bench"]
    for candidate in candidates:
        if (candidate / "popqa_ctxs.jsonl").exists():
            return candidate.resolve()
    raise UsageError(f"no benchmark data found (looked in {', '.join(map(str, candidates))}); pass --bench-dir")


def _bench_throughput(args: argparse.Namespace) -> int:
    from .bench.throughput import run

    if args.device != "cpu":
        from .bench.device import run as on_device

        _needs("torch", "the device rows need torch and transformers: pip install 'crag-shared[torch]'")
        on_device(sys.stdout, _bench_dir(args.bench_dir), args.device, queries=args.queries,
                  baseline_queries=args.baseline_queries, rounds=args.rounds)
        return 0
    run(sys.stdout, _bench_dir(args.bench_dir), queries=args.queries, baseline_queries=args.baseline_queries,
        rounds=args.rounds)
    return 0


def _bench_batch(args: argparse.Namespace) -> int:
    from .bench.batch import run

    figures = run(sys.stdout, _bench_dir(args.bench_dir), args.evaluator, queries=args.queries,
                  batch_size=args.batch_size, rounds=args.rounds, engines=args.engines, copies=args.copies,
                  web_delay=args.web_delay, upper=args.upper, lower=args.lower)
    return 0 if figures["same"] else 1


def _bench_recall(args: argparse.Namespace) -> int:
    from .bench.recall import run

    run(sys.stdout, _bench_dir(args.bench_dir), args.evaluator or ["lexical"], queries=args.queries)
    return 0


def _bench_abstain(args: argparse.Namespace) -> int:
    from .bench.abstain import run

    run(sys.stdout, _bench_dir(args.bench_dir), queries=args.queries, shift=args.shift)
    return 0


def _bench_accuracy(args: argparse.Namespace) -> int:
    from .bench.accuracy import run, table

    if not args.data:  # the evaluator table over the bench data sets
        table(sys.stdout, _bench_dir(args.bench_dir), args.evaluator or ["lexical"])
        return 0
    _readable(args.data, "--data")
    _readable(args.thresholds, "--thresholds")

    run(sys.stdout, args.data, args.evaluator or ["lexical"], thresholds=args.thresholds, kfold=args.kfold,
        base_model=args.base_model, train_steps=args.train_steps, split=args.split, titles=args.titles)
    return 0


def _calibrate(args: argparse.Namespace) -> int:
    from ..evaluators import evaluator_from_spec
    from .calibrate import fit_thresholds, score_by_query, write_outputs

    _writable(args.out, "--out")
    _writable(args.plot, "--plot")
    if args.plot:
        _needs("matplotlib", "--plot needs matplotlib: pip install 'crag-shared[plot]', or pass --plot ''")
    pairs = _load(args)
    scores, labels = score_by_query(evaluator_from_spec(args.evaluator), pairs)
    result = fit_thresholds(scores, labels, alpha=args.alpha, steps=args.steps)
    summary = write_outputs(result, args.evaluator, scores, labels, args.out, args.plot)
    print(f"thresholds: upper {summary['upper']:+.2f}, lower {summary['lower']:+.2f} (Eq. 2 = "
          f"{summary['objective']:.3f}, alpha {args.alpha:g}) on {summary['queries']} queries; "
          f"actions {summary['actions']}; judgment accuracy {summary['accuracy']:.3f}\n"
          f"written: {args.out}" + (f", {args.plot}" if args.plot else ""))
    return 0


def _fit_combination(args: argparse.Namespace) -> int:
    from ..evaluators import evaluator_from_spec
    from .combine import fit_combination

    _writable(args.out, "--out")
    members = [evaluator_from_spec(spec) for spec in args.member]
    combined = fit_combination(members, _load(args), l2=args.l2)
    combined.save(args.out)
    weights = ", ".join(f"{m.spec} {w:+.3f}" for m, w in zip(members, combined.weights))
    print(f"weights: {weights}; bias {combined.bias:+.3f}; thresholds upper {combined.thresholds[0]:+.2f}, "
          f"lower {combined.thresholds[1]:+.2f}; pair AUROC on the fitting data "
          f"{combined.report['fit_pair_auroc']:.3f}\nwritten: {args.out} (use evaluator='combined:{args.out}')")
    return 0


def _web_spec(spec: str) -> str:
    """--web, checked before any work: a known kind, and a replay file that is readable."""
    try:
        kind, target = WEB_SPECS.parse(spec)
    except ValueError as error:
        raise UsageError(f"--web: {error}") from None
    if kind.name == "replay":
        _readable(target, "--web replay:")
    return spec


def _run(args: argparse.Namespace) -> int:
    from ..config import CRAGConfig
    from ..web.spec import web_search_from_spec
    from .batch import run

    _readable(args.data, "--data")
    _writable(args.out, "--out")
    _readable(args.thresholds, "--thresholds")
    config = CRAGConfig(evaluator=args.evaluator, upper=args.upper, lower=args.lower, thresholds_path=args.thresholds,
                        score_titles=args.titles)
    web = web_search_from_spec(_web_spec(args.web))  # a missing key fails here, before any work
    if args.engine == "ray":
        from .batch_ray import run_on_ray

        _needs("ray", "--engine ray needs Ray Data: pip install 'crag-shared[ray]'")
        config.make_evaluator()  # a bad spec or a missing path fails here; actors load the model itself
        run_on_ray(config, args.data, args.out, web=args.web, batch_size=args.batch_size, limit=args.limit,
                   actors=args.actors, num_gpus=args.num_gpus, log=sys.stdout)
        return 0
    config.make_evaluator().warm_up()  # a bad evaluator spec or model fails before the output is opened
    run(config.build(web_search=web), args.data, args.out, batch_size=args.batch_size, limit=args.limit,
        log=sys.stdout)
    return 0


def _export_onnx(args: argparse.Namespace) -> int:
    from ..evaluators.onnx_export import export_onnx

    _needs("torch", "export-onnx needs torch and transformers: pip install 'crag-shared[torch,onnx]'")
    _needs("onnxruntime", "export-onnx needs onnxruntime and onnx: pip install 'crag-shared[onnx]'")
    _writable(args.out, "--out")
    target = export_onnx(args.model, args.out, quantize=not args.float, embedding=args.embedding)
    name, prefix = ("OnnxEmbeddingEvaluator", "onnx-embedding") if args.embedding else ("OnnxCrossEncoderEvaluator",
                                                                                        "onnx")
    print(f"exported {args.model} to {target} ({'float32' if args.float else 'int8 weights'}); "
          f"use it as {name}({str(target)!r}) or evaluator='{prefix}:{target}'")
    return 0


def _add_titles(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--titles", action="store_true",
                        help="read passages as 'title: text', as the Corrector scores them with score_titles=True")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="crag", description="Corrective RAG tools")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    demo = commands.add_parser("demo", help="run CRAG offline on a tiny corpus, showing all three actions")
    demo.set_defaults(func=_demo)

    train = commands.add_parser("train-evaluator", help="fine-tune a T5 or BERT-style evaluator on labelled pairs")
    train.add_argument("--data", required=True, help="JSONL pairs (query/passage/label) or PopQA records")
    train.add_argument("--base-model", required=True, help="local directory or hub id to start from")
    train.add_argument("--out", required=True, help="where to save_pretrained the best model")
    train.add_argument("--kind", choices=["bert", "t5"], default="bert")
    train.add_argument("--pooling", choices=["pair", "mean", "cls"], default="pair", help="BERT-style head input")
    train.add_argument("--validation", type=_number(float, minimum=0, maximum=0.9), default=0.15,
                       help="share of queries held out (no split column)")
    train.add_argument("--split", help="train only on pairs whose split column has this value (e.g. train); "
                                       "validation is then held out from them by query, keeping the rest unseen")
    train.add_argument("--validation-data", help="a separate JSONL file to validate on instead")
    train.add_argument("--epochs", type=POSITIVE, default=1.0)
    train.add_argument("--max-steps", type=POSITIVE_INT)
    train.add_argument("--batch-size", type=POSITIVE_INT, default=16)
    train.add_argument("--lr", type=POSITIVE, default=5e-5)
    train.add_argument("--head-lr", type=POSITIVE, default=1e-3)
    train.add_argument("--max-length", type=_number(int, minimum=8, maximum=4096), default=256)
    train.add_argument("--eval-every", type=POSITIVE_INT, default=100)
    train.add_argument("--eval-limit", type=POSITIVE_INT, default=1000)
    train.add_argument("--patience", type=POSITIVE_INT, default=4)
    train.add_argument("--listwise", type=NON_NEGATIVE, default=0.0,
                       help="weight of a per-question softmax ranking loss added to the MSE "
                            "(batches then hold whole questions)")
    train.add_argument("--temperature", type=POSITIVE, default=0.3, help="softmax temperature of --listwise")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--threads", type=POSITIVE_INT)
    train.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda", "mps"],
                       help="auto: CUDA, else MPS, else CPU; bf16 autocast on CUDA")
    _add_titles(train)
    train.set_defaults(func=_train)

    export = commands.add_parser("export-onnx", help="export a cross-encoder (or an encoder) for ONNX Runtime "
                                                     "(fused, int8)")
    export.add_argument("model", help="checkpoint directory or hub id (any CrossEncoderEvaluator model, or with "
                                      "--embedding any EmbeddingEvaluator encoder)")
    export.add_argument("out", help="directory to write; loading it needs onnxruntime, not torch")
    export.add_argument("--float", action="store_true", help="keep float32 weights instead of int8")
    export.add_argument("--embedding", action="store_true",
                        help="export a sentence encoder for OnnxEmbeddingEvaluator (mean-pooled embedding)")
    export.set_defaults(func=_export_onnx)

    batch = commands.add_parser("run", help="CRAG over a data set (JSONL in, JSONL out), resumable")
    batch.add_argument("--data", required=True, help="PopQA/CRAG records (question + ctxs) or labelled pairs")
    batch.add_argument("--out", required=True, help="JSONL results; rerunning skips the ids already in it")
    batch.add_argument("--evaluator", default="lexical", help=EVALUATOR_HELP)
    batch.add_argument("--upper", type=_number(float, minimum=-1, maximum=1))
    batch.add_argument("--lower", type=_number(float, minimum=-1, maximum=1))
    batch.add_argument("--thresholds", help="thresholds JSON from crag calibrate (wins over --upper/--lower)")
    batch.add_argument("--web", default="none",
                       help=f"{' | '.join(WEB_SPECS.grammar())} (keys: environment)")
    batch.add_argument("--batch-size", type=POSITIVE_INT, default=32, help="queries per correct_many call")
    batch.add_argument("--limit", type=POSITIVE_INT, help="stop once this many queries are in --out")
    batch.add_argument("--engine", choices=["local", "ray"], default="local",
                       help="local: this process; ray: Ray Data on a local cluster, or the one in RAY_ADDRESS")
    batch.add_argument("--actors", type=POSITIVE_INT, default=1,
                       help="--engine ray: evaluator actors (each loads the evaluator once)")
    batch.add_argument("--num-gpus", type=NON_NEGATIVE, default=0.0,
                       help="--engine ray: GPUs per actor (fractions share a GPU)")
    _add_titles(batch)
    batch.set_defaults(func=_run)

    fit = commands.add_parser("fit-combination", help="fit a combination of evaluators on labelled pairs")
    fit.add_argument("--data", required=True, help="JSONL pairs (query/passage/label) or PopQA records")
    fit.add_argument("--member", action="append", required=True,
                     help="an evaluator spec to combine (repeat): lexical, embedding:PATH, cross-encoder:PATH...")
    fit.add_argument("--split", help="only pairs whose split column has this value (fit on train, report on eval)")
    fit.add_argument("--l2", type=NON_NEGATIVE, default=1e-3, help="L2 penalty of the logistic regression")
    fit.add_argument("--out", default="combined.json")
    _add_titles(fit)
    fit.set_defaults(func=_fit_combination)

    bench = commands.add_parser("bench", help="benchmarks (figures measured within one run)")
    benches = bench.add_subparsers(dest="bench", required=True, parser_class=_Parser)
    web = benches.add_parser("web", help="concurrent page fetching vs sequential, loopback pages with latency")
    web.add_argument("--pages", type=_number(int, minimum=1, maximum=50), default=5)
    web.add_argument("--delay", type=_number(float, minimum=0, maximum=10), default=0.3,
                     help="server delay per page, seconds (t)")
    web.add_argument("--repeats", type=POSITIVE_INT, default=3)
    web.set_defaults(func=_bench_web)
    throughput = benches.add_parser("throughput", help="evaluator pairs/s vs the official code's way; latency")
    throughput.add_argument("--bench-dir")
    throughput.add_argument("--queries", type=POSITIVE_INT, default=20)
    throughput.add_argument("--baseline-queries", type=POSITIVE_INT, default=6)
    throughput.add_argument("--rounds", type=POSITIVE_INT, default=3, help="interleaved rounds; the best is reported")
    throughput.add_argument("--device", default="cpu",
                            help="cpu: the CPU table (torch, int8, ONNX); cuda, cuda:N, mps or auto: the GPU rows "
                                 "(paper-style, crag defaults, bf16 first and warm pass)")
    throughput.set_defaults(func=_bench_throughput)
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
    many.add_argument("--upper", type=_number(float, minimum=-1, maximum=1), help="replaces the evaluator's")
    many.add_argument("--lower", type=_number(float, minimum=-1, maximum=1), help="replaces the evaluator's")
    many.set_defaults(func=_bench_batch)
    recall = benches.add_parser("recall", help="answer recall and words handed over: plain RAG vs CRAG")
    recall.add_argument("--bench-dir")
    recall.add_argument("--evaluator", action="append", help=f"{EVALUATOR_HELP} (repeatable); default lexical")
    recall.add_argument("--queries", type=POSITIVE_INT, default=100)
    recall.set_defaults(func=_bench_recall)
    abstain = benches.add_parser("abstain", help="does irrelevant text reach the generator? core and every "
                                 "adapter entry point, out of corpus and in corpus, default settings")
    abstain.add_argument("--bench-dir")
    abstain.add_argument("--queries", type=POSITIVE_INT, default=100)
    abstain.add_argument("--shift", type=POSITIVE_INT, default=1,
                         help="out of corpus: question i gets the passages of question i+SHIFT")
    abstain.set_defaults(func=_bench_abstain)
    accuracy = benches.add_parser("accuracy", help="pair AUROC/accuracy/F1 and query-level judgment accuracy")
    accuracy.add_argument("--data", help="JSONL pairs or PopQA records; without it, one table of every "
                                        "--evaluator over PopQA text/titles, qa_pairs eval and its hard negatives")
    accuracy.add_argument("--bench-dir")
    accuracy.add_argument("--evaluator", action="append", help=f"{EVALUATOR_HELP} (repeatable); default lexical")
    accuracy.add_argument("--thresholds", help="thresholds JSON from crag calibrate")
    accuracy.add_argument("--kfold", type=_number(int, minimum=0), default=0,
                          help="also train and test k folds by question")
    accuracy.add_argument("--base-model", help="model to train from in --kfold")
    accuracy.add_argument("--train-steps", type=POSITIVE_INT, default=100)
    accuracy.add_argument("--split", help="only pairs whose split column has this value (e.g. eval)")
    _add_titles(accuracy)
    accuracy.set_defaults(func=_bench_accuracy)

    cal = commands.add_parser("calibrate", help="fit the action thresholds to labelled data (paper Eq. 2)")
    cal.add_argument("--data", required=True, help="JSONL pairs (query/passage/label) or PopQA records")
    cal.add_argument("--evaluator", default="lexical", help=EVALUATOR_HELP)
    cal.add_argument("--alpha", type=NON_NEGATIVE, default=1.0, help="false-positive penalty of Eq. 2")
    cal.add_argument("--split", help="only pairs whose split column has this value (e.g. eval)")
    cal.add_argument("--steps", type=_number(int, minimum=2, maximum=MAX_STEPS), default=201,
                     help="grid points over [-1, 1]")
    cal.add_argument("--out", default="thresholds.json")
    cal.add_argument("--plot", default="thresholds.png", help="PNG path ('' for none)")
    _add_titles(cal)
    cal.set_defaults(func=_calibrate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return args.func(args)
    except UsageError as error:
        return _fail(str(error))
    except (OSError, ValueError, RecursionError) as error:  # unreadable files, malformed data, bad specs
        return _fail(_one_line(error))
    except ImportError as error:
        return _fail(f"a dependency is missing: {_one_line(error)}")
    except KeyboardInterrupt:
        return _fail("interrupted", 130)


def _one_line(error: BaseException) -> str:
    if isinstance(error, OSError) and error.filename is not None:
        return f"{error.filename}: {error.strerror or error}"
    return " ".join(str(error).split()) or type(error).__name__


def _fail(message: str, status: int = 2) -> int:
    print(f"crag: error: {message}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
