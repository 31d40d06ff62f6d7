"""The `crag` command: demo, run, calibrate, report, export, fit-combination, train-evaluator and export-onnx.

Every user error (a bad argument, a missing or malformed file, a missing optional dependency) ends with
one line on stderr saying what is wrong, and exit status 2; a traceback means a bug in crag.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..web.keys import scrub_all
from ..web.spec import WEB_SPECS
from .commands import UsageError, build_parser

if TYPE_CHECKING:
    from ..calibration import QACalibration
    from ..corrector import Corrector

__all__ = ["HANDLERS", "dispatch", "guarded", "main", "needs", "readable"]


def writable(path: str | None, option: str) -> None:
    """An output path must lie in an existing directory and be no pipe or device (a FIFO would hang,
    /dev/zero never ends); said before any work is done."""
    if path and not Path(path).expanduser().resolve().parent.is_dir():
        raise UsageError(f"{option} {path}: the directory {Path(path).parent} does not exist")
    target = Path(path).expanduser() if path else None
    if target and (target.is_fifo() or target.is_char_device() or target.is_block_device() or target.is_socket()):
        raise UsageError(f"{option} {path}: not a regular file (a pipe or a device); write to a file")


def readable(path: str | None, option: str) -> None:
    """An input path must be an existing file; said before any work is done."""
    if path and not Path(path).is_file():
        raise UsageError(f"{option} {path}: no such file")


def needs(module: str, hint: str) -> None:
    """An optional dependency must be installed; `hint` says how."""
    if importlib.util.find_spec(module) is None:
        raise UsageError(hint)


def _demo(args: argparse.Namespace) -> int:
    from ..demo import run

    return run(sys.stdout)


def _load(args: argparse.Namespace, path: str | None = None, *, titles: bool | None = None) -> list:
    """The labelled pairs of `path` (default `--data`, kept to `--split`), read with `--titles` unless
    `titles` says otherwise; a bad or empty file exits with its error."""
    from .data import load_pairs

    readable(path or args.data, "--data")
    return load_pairs(path or args.data, titles=args.titles if titles is None else titles,
                      split=None if path else args.split)


def _train(args: argparse.Namespace) -> int:
    from .data import split_by_query
    from .train import TrainConfig, train_evaluator

    needs("torch", "train-evaluator needs torch and transformers: pip install 'crag-shared[torch]'")
    readable(args.validation_data, "--validation-data")
    writable(args.out, "--out")
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


def _judge(args: argparse.Namespace) -> Corrector:
    """The Corrector thresholds are fitted with, built as `crag run` builds its own: `--evaluator`, scoring
    "title: text" with `--titles`; no fallback evaluator, so a failing evaluator stops the fit instead of
    fitting another's scores."""
    from ..config import CRAGConfig
    from ..corrector import Corrector

    config = CRAGConfig(evaluator=args.evaluator, score_titles=args.titles, fallback_evaluator=None)
    return Corrector.from_config(config)


def _calibrate(args: argparse.Namespace) -> int:
    from ..calibration import fit_thresholds
    from .batch import json_line
    from .calibrate import judge_by_query, plot, with_near_misses, write_outputs

    for path, option in ((args.out, "--out"), (args.plot, "--plot"), (args.records, "--records")):
        writable(path, option)
    if args.plot:
        needs("matplotlib", "--plot needs matplotlib: pip install 'crag-shared[plot]', or pass --plot ''")
    if args.qa:
        return _calibrate_qa(args, _judge(args), plot)
    if args.retrieved or args.near_miss_budget is not None:
        raise UsageError("--retrieved and --near-miss-budget go with --qa (labelled --data needs no retrieval)")
    pairs = _load(args, titles=False)  # the judge adds the titles, as the Corrector does
    scores, labels = judge_by_query(_judge(args), with_near_misses(pairs) if args.near_misses else pairs)
    result = fit_thresholds(scores, labels, alpha=args.alpha, steps=args.steps)
    summary = write_outputs(result, args.evaluator, scores, labels, args.out, args.plot)
    if args.records:
        Path(args.records).write_text("".join(json_line({"scores": s, "labels": y, "thresholds": {
            "upper": summary["upper"], "lower": summary["lower"]}}) + "\n" for s, y in zip(scores, labels)))
    print(f"thresholds: upper {summary['upper']:+.2f}, lower {summary['lower']:+.2f} (Eq. 2 = "
          f"{summary['objective']:.3f}, alpha {args.alpha:g}) on {summary['queries']} queries; "
          f"actions {summary['actions']}; judgment accuracy {summary['accuracy']:.3f}\n"
          f"written: {args.out}" + (f", {args.plot}" if args.plot else ""))
    return 0


def _calibrate_qa(args: argparse.Namespace, judge: Corrector, plot: Callable[..., None]) -> int:
    from ..calibration import calibrate_qa, read_qa, read_retrieved
    from .batch import json_line

    if not args.retrieved:
        raise UsageError("--qa needs --retrieved: the passages your retriever returned for each question")
    readable(args.qa, "--qa")
    readable(args.retrieved, "--retrieved")
    qa = read_qa(args.qa)
    result = calibrate_qa(judge, qa, read_retrieved(args.retrieved, qa), evaluator_name=args.evaluator,
                          alpha=args.alpha, steps=args.steps, near_miss_budget=args.near_miss_budget, out=args.out,
                          keep_answers=args.keep_answers)
    if args.plot:
        plot(result.calibration, [q.scores for q in result.queries], [q.labels for q in result.queries], args.plot)
    if args.records:
        Path(args.records).write_text("".join(json_line(r) + "\n" for r in result.records()), encoding="utf-8")
    print(tradeoff_text(result))
    print("written: " + ", ".join(p for p in (args.out, args.plot, args.records) if p))
    return 0


def tradeoff_text(result: QACalibration) -> str:
    """The fitted thresholds, the counts, the trade-off rows a user chooses by, and the calibration's
    warnings, as `crag calibrate` prints them."""
    summary = result.summary()
    answerable, near = summary["answerable"], summary["near_miss_queries"]
    lines = [f"thresholds ({summary['chosen_by']}): upper {summary['upper']:+.2f}, lower {summary['lower']:+.2f} "
             f"(Eq. 2 = {summary['objective']:.3f}, alpha {summary['alpha']:g}); {summary['questions']} questions: "
             f"{answerable} with a retrieved passage holding an answer, {summary['no_answer']} without (counted as "
             f"negatives); {near} near-miss queries",
             "upper   answers kept   near misses passed on   answerless passed on"]
    for row in result.tradeoff:
        if row.upper < -0.5 or row.upper > 0.9:
            continue
        mark = "  <- chosen" if row.upper == summary["upper"] else ""
        lines.append(f"{row.upper:+.2f}   {row.answers_kept:>5}/{answerable:<6} {row.near_misses_passed:>8}/{near:<12}"
                     f"{row.no_answer_passed:>6}/{summary['no_answer']}{mark}")
    return "\n".join([*lines, *(f"warning: {warning}" for warning in summary["warnings"])])


def _fit_combination(args: argparse.Namespace) -> int:
    from ..evaluators import evaluator_from_spec, evaluator_spec, save_combination
    from .combine import fit_combination

    writable(args.out, "--out")
    members = [evaluator_from_spec(spec) for spec in args.member]
    combined = fit_combination(members, _load(args), l2=args.l2)
    save_combination(combined, args.out)
    weights = ", ".join(f"{evaluator_spec(m)} {w:+.3f}" for m, w in zip(members, combined.weights))
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
        readable(target, "--web replay:")
    return spec


def _run(args: argparse.Namespace) -> int:
    from ..config import CRAGConfig
    from ..corrector import Corrector
    from ..corrector.configured import config_evaluator
    from ..web.spec import web_search_from_spec
    from .batch import run

    readable(args.data, "--data")
    writable(args.out, "--out")
    readable(args.thresholds, "--thresholds")
    config = CRAGConfig(evaluator=args.evaluator, upper=args.upper, lower=args.lower, thresholds_path=args.thresholds,
                        language=args.language,
                        score_titles=args.titles)
    web = web_search_from_spec(_web_spec(args.web))  # a missing key fails here, before any work
    if args.engine == "ray":
        from .batch_ray import run_on_ray

        needs("ray", "--engine ray needs Ray Data: pip install 'crag-shared[ray]'")
        config_evaluator(config)  # a bad spec or a missing path fails here; actors load the model itself
        run_on_ray(config, args.data, args.out, web=args.web, batch_size=args.batch_size, limit=args.limit,
                   actors=args.actors, num_gpus=args.num_gpus, log=sys.stdout)
        return 0
    config_evaluator(config).warm_up()  # a bad evaluator spec or model fails before the output is opened
    run(Corrector.from_config(config, web_search=web), args.data, args.out, batch_size=args.batch_size,
        limit=args.limit, log=sys.stdout)
    return 0


def _export_onnx(args: argparse.Namespace) -> int:
    from ..evaluators.onnx_export import export_onnx

    needs("torch", "export-onnx needs torch and transformers: pip install 'crag-shared[torch,onnx]'")
    needs("onnxruntime", "export-onnx needs onnxruntime and onnx: pip install 'crag-shared[onnx]'")
    writable(args.out, "--out")
    target = export_onnx(args.model, args.out, quantize=not args.float, embedding=args.embedding)
    name, prefix = ("OnnxEmbeddingEvaluator", "onnx-embedding") if args.embedding else ("OnnxCrossEncoderEvaluator",
                                                                                        "onnx")
    print(f"exported {args.model} to {target} ({'float32' if args.float else 'int8 weights'}); "
          f"use it as {name}({str(target)!r}) or evaluator='{prefix}:{target}'")
    return 0


def _report(args: argparse.Namespace) -> int:
    from .report import write_report

    readable(args.results, "results")
    writable(args.out, "--out")
    needs("matplotlib", "crag report needs matplotlib: pip install 'crag-shared[plot]'")
    queries = write_report(args.results, args.out, args.title)
    print(f"report of {queries} queries: {args.out}")
    return 0


def _export(args: argparse.Namespace) -> int:
    from .export import export_run

    readable(args.results, "results")
    readable(args.data, "--data")
    writable(args.out, "--out")
    counts = export_run(args.results, args.out, args.format, data=args.data)
    failed = f"; {counts['failed']} failed queries left out" if counts["failed"] else ""
    print(f"exported {counts['rows']} queries as {args.format} rows ({counts['with_reference']} with a reference"
          f"{failed}): {args.out}")
    return 0


def _schema(args: argparse.Namespace) -> int:
    from pydantic import TypeAdapter

    from ..config import CRAGConfig
    from ..evaluators.spec import CombinationFile
    from ..policy import ThresholdsFile
    from ..rows import DataRow
    from ..summary import Summary

    declared = {
        "config": CRAGConfig.model_json_schema,
        "summary": lambda: Summary.model_json_schema(mode="serialization"),
        "thresholds": ThresholdsFile.model_json_schema,
        "combination": CombinationFile.model_json_schema,
        "row": lambda: TypeAdapter(DataRow).json_schema(by_alias=False),
    }
    print(json.dumps(declared[args.name](), indent=2))
    return 0


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "demo": _demo, "train-evaluator": _train, "export-onnx": _export_onnx, "run": _run,
    "fit-combination": _fit_combination, "calibrate": _calibrate, "report": _report, "export": _export,
    "schema": _schema,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run `crag` with `argv`; the exit status (2 with one line on stderr for any user error)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["bench"]:
        return _fail(bench_moved(args[1:]))
    return dispatch(build_parser, HANDLERS, "command", argv)


def bench_moved(args: Sequence[str]) -> str:
    """What `crag bench NAME` says: the benchmarks are their own command, `crag-bench NAME`."""
    name = " ".join(args) or "NAME"
    return (f"`crag bench` is `crag-bench` since 0.2.0: run `crag-bench {name}` (`crag-bench --help` lists the "
            "benchmarks; it comes with the development workspace, pip install -r requirements-dev.txt)")


def dispatch(parser: Callable[[], argparse.ArgumentParser], handlers: dict[str, Callable[[argparse.Namespace], int]],
             name: str, argv: Sequence[str] | None) -> int:
    """Parse `argv` and run the handler its subcommand (the `name` attribute) names, `guarded`."""
    def command() -> int:
        args = parser().parse_args(argv)
        return handlers[getattr(args, name)](args)

    return guarded(command)


def guarded(command: Callable[[], int]) -> int:
    """Run a command; a user error (a bad argument or file, a missing dependency) ends as one line on stderr
    with exit status 2, and a traceback means a bug."""
    try:
        return command()
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
    print(f"crag: error: {scrub_all(message)}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
