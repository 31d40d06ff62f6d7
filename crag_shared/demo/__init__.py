"""`crag demo`: CRAG on a tiny corpus, offline, showing each of the three actions."""

from __future__ import annotations

import json
import textwrap
from importlib import resources
from pathlib import Path
from typing import TextIO

from ..corrector import Corrector
from ..evaluators.lexical import LexicalEvaluator
from ..types import Action, CorrectionResult, Passage
from ..web.replay import ReplaySearch

QUESTIONS = [
    "When did the Golden Gate Bridge open?",  # the corpus answers it: Correct
    "Who designed the Sydney Harbour Bridge?",  # the corpus is close but not sure: Ambiguous
    "What is the capital of Mongolia?",  # the corpus knows nothing about it: Incorrect
]


def corpus() -> list[Passage]:
    """The demo's tiny corpus, as `Passage`s with ids and titles."""
    data = json.loads(resources.files(__package__).joinpath("corpus.json").read_text(encoding="utf-8"))
    return [Passage(d["text"], id=d["id"], title=d["title"]) for d in data]


def retrieve(question: str, passages: list[Passage], k: int = 3) -> list[Passage]:
    """A stand-in for your retriever: the k passages with most word overlap, relevant or not."""
    scores = LexicalEvaluator().score(question, [p.text or "" for p in passages])
    return [passages[i] for i in sorted(range(len(passages)), key=lambda i: -scores[i])[:k]]


def recorded_web_path() -> Path:
    """The recorded web results of the demo questions (a JSONL file for `ReplaySearch`)."""
    return Path(str(resources.files(__package__).joinpath("web.jsonl")))


def build_corrector() -> Corrector:
    """The demo's Corrector: the model-free lexical evaluator, named rather than the default judge (a trained
    reader where one is installed), and the recorded web pages (nothing leaves the machine)."""
    return Corrector(evaluator=LexicalEvaluator(), web_search=ReplaySearch(recorded_web_path()))


def show(result: CorrectionResult, out: TextIO) -> None:
    """Print one result the way `crag demo` shows it: scores, action, strips, fallbacks, abstention."""
    upper, lower = result.thresholds
    out.write(f"\nQ: {result.query}\n  retrieved passages and evaluator scores:\n")
    for passage, score in zip(result.passages, result.scores):
        out.write(f"    {score:+.2f}  {passage.title} [{passage.id}]\n")
    out.write(f"  action: {result.action.value.upper()}  (upper {upper:+.2f}, lower {lower:+.2f})\n")
    if result.rewritten_query:
        out.write(f"  web search query: {result.rewritten_query!r}\n")
    out.write("  knowledge strips:\n")
    for strip in result.knowledge:
        where = f"{strip.url} ({strip.source_id})" if strip.url else f"{strip.source_id}, strip {strip.position}"
        out.write(f"    [{strip.origin.value} {strip.score:+.2f}] {where}\n")
        out.write(textwrap.indent(textwrap.fill(strip.text, 96), "      ") + "\n")
    for fallback in result.fallbacks:
        out.write(f"  fallback: {fallback}\n")
    if result.abstention is not None:
        out.write(f"  abstained (the LLM is not asked): {result.abstention.reason}\n")


def run(out: TextIO) -> int:
    """Print the walk of each demo question; return 0 when all three actions were shown."""
    corrector, passages = build_corrector(), corpus()
    out.write("crag demo: LexicalEvaluator, recorded web results (ReplaySearch), nothing leaves this machine\n")
    seen = set()
    for question in QUESTIONS:
        result = corrector.correct(question, retrieve(question, passages))
        seen.add(result.action)
        show(result, out)
    missing = {Action.CORRECT, Action.AMBIGUOUS, Action.INCORRECT} - seen
    if missing:
        out.write(f"\nnot shown: {', '.join(sorted(a.value for a in missing))}\n")
        return 1
    out.write("\nall three actions shown: correct, ambiguous, incorrect\n")
    return 0
