"""The `crag` command line: every subcommand's arguments (the handlers are in `cli.py`)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any

from ..calibration import MAX_STEPS
from ..evaluators.spec import EVALUATOR_SPECS
from ..web.spec import WEB_SPECS

__all__ = [
    "EVALUATOR_HELP", "NON_NEGATIVE", "POSITIVE_INT", "Parser", "UsageError", "add_titles", "build_parser", "number",
]


class UsageError(Exception):
    """A mistake in how crag was called; printed as one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    """An argument parser whose mistakes raise `UsageError` (one line, exit status 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        """Raise the mistake instead of printing usage and exiting."""
        raise UsageError(f"{self.prog}: {message}")


def number(kind: Callable[[str], float], minimum: float | None = None, maximum: float | None = None,
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


POSITIVE_INT = number(int, minimum=1)
NON_NEGATIVE = number(float, minimum=0)
#: The evaluator specs a command line can build (the LLM judge needs an application's LLM).
EVALUATOR_HELP = "evaluator spec: " + " | ".join(
    g.replace("[:", ":").rstrip("]") for g in EVALUATOR_SPECS.grammar() if not g.startswith(("llm", "custom")))
POSITIVE = number(float, above=0)


def add_titles(parser: argparse.ArgumentParser) -> None:
    """The --titles flag of the commands that read labelled passages."""
    parser.add_argument("--titles", action="store_true",
                        help="read passages as 'title: text', as the Corrector scores them with score_titles=True")


def build_parser() -> argparse.ArgumentParser:
    """The parser of `crag`: `args.command` names the subcommand."""
    parser = Parser(prog="crag", description="Corrective RAG tools")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    _demo_command(commands)
    _train_evaluator_command(commands)
    _export_onnx_command(commands)
    _run_command(commands)
    _fit_combination_command(commands)
    _calibrate_command(commands)
    _report_command(commands)
    _export_command(commands)
    _schema_command(commands)
    return parser


def _demo_command(commands: Any) -> None:
    commands.add_parser("demo", help="run CRAG offline on a tiny corpus, showing all three actions")


def _train_evaluator_command(commands: Any) -> None:
    train = commands.add_parser("train-evaluator", help="fine-tune a T5 or BERT-style evaluator on labelled pairs")
    train.add_argument("--data", required=True, help="JSONL pairs (query/passage/label) or PopQA records")
    train.add_argument("--base-model", required=True, help="local directory or hub id to start from")
    train.add_argument("--out", required=True, help="where to save_pretrained the best model")
    train.add_argument("--kind", choices=["bert", "t5"], default="bert")
    train.add_argument("--pooling", choices=["pair", "mean", "cls"], default="pair", help="BERT-style head input")
    train.add_argument("--validation", type=number(float, minimum=0, maximum=0.9), default=0.15,
                       help="share of queries held out (no split column)")
    train.add_argument("--split", help="train only on pairs whose split column has this value (e.g. train); "
                                       "validation is then held out from them by query, keeping the rest unseen")
    train.add_argument("--validation-data", help="a separate JSONL file to validate on instead")
    train.add_argument("--epochs", type=POSITIVE, default=1.0)
    train.add_argument("--max-steps", type=POSITIVE_INT)
    train.add_argument("--batch-size", type=POSITIVE_INT, default=16)
    train.add_argument("--lr", type=POSITIVE, default=5e-5)
    train.add_argument("--head-lr", type=POSITIVE, default=1e-3)
    train.add_argument("--max-length", type=number(int, minimum=8, maximum=4096), default=256)
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
    add_titles(train)


def _export_onnx_command(commands: Any) -> None:
    export = commands.add_parser("export-onnx", help="export a cross-encoder (or an encoder) for ONNX Runtime "
                                                     "(fused, int8)")
    export.add_argument("model", help="checkpoint directory or hub id (any CrossEncoderEvaluator model, or with "
                                      "--embedding any EmbeddingEvaluator encoder)")
    export.add_argument("out", help="directory to write; loading it needs onnxruntime, not torch")
    export.add_argument("--float", action="store_true", help="keep float32 weights instead of int8")
    export.add_argument("--embedding", action="store_true",
                        help="export a sentence encoder for OnnxEmbeddingEvaluator (mean-pooled embedding)")


def _run_command(commands: Any) -> None:
    batch = commands.add_parser("run", help="CRAG over a data set (JSONL in, JSONL out), resumable")
    batch.add_argument("--data", required=True, help="PopQA/CRAG records (question + ctxs) or labelled pairs")
    batch.add_argument("--out", required=True, help="JSONL results; rerunning skips the ids already in it")
    batch.add_argument("--evaluator", default="default", help=EVALUATOR_HELP)
    batch.add_argument("--upper", type=number(float, minimum=-1, maximum=1))
    batch.add_argument("--lower", type=number(float, minimum=-1, maximum=1))
    batch.add_argument("--thresholds", help="thresholds JSON from crag calibrate (wins over --upper/--lower)")
    batch.add_argument("--language", default="en",
                       help="what the questions and passages are written in: an ISO 639-1 code (en, zh, ja, de, "
                            "fr, ...) or auto (each question's, detected)")
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
    add_titles(batch)


def _fit_combination_command(commands: Any) -> None:
    fit = commands.add_parser("fit-combination", help="fit a combination of evaluators on labelled pairs")
    fit.add_argument("--data", required=True, help="JSONL pairs (query/passage/label) or PopQA records")
    fit.add_argument("--member", action="append", required=True,
                     help="an evaluator spec to combine (repeat): lexical, embedding:PATH, cross-encoder:PATH...")
    fit.add_argument("--split", help="only pairs whose split column has this value (fit on train, report on eval)")
    fit.add_argument("--l2", type=NON_NEGATIVE, default=1e-3, help="L2 penalty of the logistic regression")
    fit.add_argument("--out", default="combined.json")
    add_titles(fit)


def _calibrate_command(commands: Any) -> None:
    cal = commands.add_parser("calibrate", help="fit the action thresholds to labelled data, or to questions with "
                                                "their answers and the passages your retriever returned (Eq. 2)")
    source = cal.add_mutually_exclusive_group(required=True)
    source.add_argument("--data", help="JSONL pairs (query/passage/label) or PopQA records")
    source.add_argument("--qa", help='JSONL questions with answers: {"question", "answers": [...], "id"?} a line; '
                                     "needs --retrieved")
    cal.add_argument("--retrieved", help='with --qa: JSONL, {"id" or "question", "passages": [text or {"text", '
                                         '"title"}]} a line, or any crag run data file: what your retriever '
                                         'returned for each question')
    cal.add_argument("--near-miss-budget", type=number(float, minimum=0, maximum=1),
                     help="with --qa: instead of Eq. 2's upper threshold, the one keeping the most answers while "
                          "passing on at most this share of the near misses (e.g. 0.2)")
    cal.add_argument("--keep-answers", type=number(float, minimum=0.01, maximum=1), default=0.8,
                     help="with --qa: warn when the thresholds keep under this share of the answers, naming the "
                          "--near-miss-budget that keeps it (default 0.8)")
    cal.add_argument("--records", help="also write one JSON line per query fitted on (scores, labels): the input of "
                                       "crag report's trade-off curve")
    cal.add_argument("--evaluator", default="default", help=EVALUATOR_HELP)
    cal.add_argument("--alpha", type=NON_NEGATIVE, default=1.0, help="false-positive penalty of Eq. 2")
    cal.add_argument("--split", help="only pairs whose split column has this value (e.g. eval)")
    cal.add_argument("--steps", type=number(int, minimum=2, maximum=MAX_STEPS), default=201,
                     help="grid points over [-1, 1]")
    cal.add_argument("--near-misses", action="store_true",
                     help="also a negative query of each question's passages that are not relevant (at least 3): "
                          "thresholds that judge the right neighbourhood without the answer Incorrect")
    cal.add_argument("--out", default="thresholds.json")
    cal.add_argument("--plot", default="thresholds.png", help="PNG path ('' for none)")
    add_titles(cal)


def _report_command(commands: Any) -> None:
    report = commands.add_parser("report", help="one self-contained HTML page of what CRAG decided: a crag run "
                                                "output, calibration records or a log of live queries' metadata")
    report.add_argument("results", help="JSONL: crag run --out, crag calibrate --records, or one response.metadata"
                                        "['crag'] / CRAGReport dict a line")
    report.add_argument("-o", "--out", default="report.html")
    report.add_argument("--title", help="the page title (default: from the file name)")


#: The files and records crag reads and writes whose JSON Schema `crag schema NAME` prints.
SCHEMAS = ("config", "summary", "thresholds", "combination", "row")


def _schema_command(commands: Any) -> None:
    schema = commands.add_parser("schema", help="the JSON Schema of a file or record crag reads and writes: a "
                                                "saved configuration, a result's summary (crag run lines, CRAG "
                                                "metadata), a thresholds file, a combination file, a line of a "
                                                "data file (crag run, calibrate, report)")
    schema.add_argument("name", choices=SCHEMAS)


def _export_command(commands: Any) -> None:
    from .export import FORMATS

    export = commands.add_parser("export", help="a crag run output as evaluation-tool rows (ragas, deepeval), one "
                                                "a query: the question, what CRAG handed on and its verdict")
    export.add_argument("results", help="JSONL: a crag run --out")
    export.add_argument("--format", required=True, choices=FORMATS,
                        help="ragas: SingleTurnSample rows (user_input, retrieved_contexts, reference); deepeval: "
                             "Golden rows (input, retrieval_context, expected_output)")
    export.add_argument("-o", "--out", required=True, help="the JSONL file to write")
    export.add_argument("--data", help="the run's input (crag run --data): its gold answers become each row's "
                                       "reference, matched by id")
