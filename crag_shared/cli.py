"""The `crag` command: demo, calibrate, train-evaluator and bench subcommands."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def _demo(args: argparse.Namespace) -> int:
    from .demo import run

    return run(sys.stdout)


def _bench_web(args: argparse.Namespace) -> int:
    from .bench.web import run

    figures = run(sys.stdout, pages=args.pages, delay=args.delay, repeats=args.repeats)
    return 0 if figures["ours_over_t"] <= 1.3 else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="crag", description="Corrective RAG tools")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="run CRAG offline on a tiny corpus, showing all three actions")
    demo.set_defaults(func=_demo)

    bench = commands.add_parser("bench", help="benchmarks (figures measured within one run)")
    benches = bench.add_subparsers(dest="bench", required=True)
    web = benches.add_parser("web", help="concurrent page fetching vs sequential, loopback pages with latency")
    web.add_argument("--pages", type=int, default=5)
    web.add_argument("--delay", type=float, default=0.3, help="server delay per page, seconds (t)")
    web.add_argument("--repeats", type=int, default=3)
    web.set_defaults(func=_bench_web)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
