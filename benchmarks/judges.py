"""`crag-bench judges`: answers kept and near misses passed, per judge, per set, per half, on one line.

A judge set (`benchmarks/judge_sets/<name>/`, format in its README) is a corpus of passages and questions
of three kinds: answerable (a passage states the answer), near miss (the corpus has the question's topic
and names, not its answer) and off topic. Each question retrieves its top 5 passages from the corpus with
BM25 (Haystack's in-memory retriever); an answerable question whose answer passage was not retrieved gets it
in place of the fifth, so every answerable row holds its answer. Counted through the Corrector (default
settings, no web search): an answer is kept when a gold answer reaches the generator; a near miss or an
off-topic question is passed when any text does.

The sets: `docs`, `facts`, `domains` (development sets: every choice is made on their `tune` half, figures
are reported on `test`), `heldout-*` (written by someone who never showed them to the engineers tuning the
judges: only their totals are ever printed), and PopQA's three sets from `near_miss.py` (in corpus, near miss,
off topic; halves by question).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from crag_shared.corrector import Corrector
from crag_shared.evaluators import Evaluation, RetrievalEvaluator, evaluator_from_spec
from crag_shared.policy import ActionPolicy
from crag_shared.tools.data import auroc
from crag_shared.types import Passage

from .near_miss import Row, figures, popqa_sets

SETS = Path(__file__).with_name("judge_sets")
TOP_K = 5


def judge_set(folder: Path, top_k: int = TOP_K) -> dict[str, list[Row]]:
    """A judge set's rows (the abstain benchmark's shape, with `half`), by part: in corpus, near miss, off
    topic; each question with its top `top_k` passages by BM25, its answer passage forced in."""
    from haystack import Document
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    corpus = {row["id"]: row for row in map(json.loads, (folder / "corpus.jsonl").open(encoding="utf-8"))}
    store = InMemoryDocumentStore()
    store.write_documents([Document(id=i, content=p["text"], meta={"title": p["title"]}) for i, p in corpus.items()])
    retriever = InMemoryBM25Retriever(store, top_k=top_k)
    parts: dict[str, list[Row]] = {"in corpus": [], "near miss": [], "off topic": []}
    for question in map(json.loads, (folder / "questions.jsonl").open(encoding="utf-8")):
        found = [d.id for d in retriever.run(query=question["question"])["documents"]]
        gold = question.get("answer_ids") or []
        if gold and not set(gold) & set(found):
            found = [*found[: top_k - 1], gold[0]]
        row = {"question": question["question"], "answers": question.get("answers") or [],
               "half": "test" if question.get("split") == "test" else "tune", "style": question.get("style"),
               "passages": [Passage(corpus[i]["text"], id=i, title=corpus[i]["title"] or None) for i in found],
               "relevant": bool(gold)}
        row["answering"] = corpus[gold[0]]["text"] if gold else ""
        row["gold"] = [corpus[i]["text"] for i in gold]
        kind = question["kind"]
        parts["in corpus" if kind == "answerable" else "near miss" if kind == "near_miss" else "off topic"].append(row)
    return parts


def judge_sets(root: Path = SETS, names: Sequence[str] | None = None) -> dict[str, dict[str, list[Row]]]:
    """Every judge set under `root` (or those named), by name."""
    folders = sorted(p.parent for p in root.glob("*/questions.jsonl"))
    return {f.name: judge_set(f) for f in folders if names is None or f.name in names}


#: The blind-spot sets (`judge_sets/blindspots/`, the reader's data) as one set per half of domains:
#: `blindspots-test` (held out of the reader's training; its rows count as the test half) and `blindspots-valid`
#: (the reader's validation domains; its rows count as the tune half).
BLINDSPOT_SETS = {"blindspots-test": "test", "blindspots-valid": "valid"}


def blindspot_set(domains: str) -> dict[str, list[Row]]:
    """Every blind-spot set of one half of the domains (`halves.json`: "test" or "valid"), merged."""
    from .reader.labelling import halves

    merged: dict[str, list[Row]] = {"in corpus": [], "near miss": [], "off topic": []}
    for name, half in sorted(halves().items()):
        if half == domains:
            for part, rows in judge_set(SETS / "blindspots" / name).items():
                merged[part] += [{**row, "half": "test" if domains == "test" else "tune"} for row in rows]
    return merged


def every_set(bench: Path | None, names: Sequence[str] | None = None) -> dict[str, dict[str, list[Row]]]:
    """The judge sets (or those named: also `BLINDSPOT_SETS`) and, with the bench data, PopQA's sets."""
    sets = judge_sets(SETS, names)
    sets |= {name: blindspot_set(domains) for name, domains in BLINDSPOT_SETS.items() if names and name in names}
    if bench is not None and (names is None or "popqa" in names):
        sets["popqa"] = popqa_sets(bench)
    return sets


def line(name: str, half: str, found: Sequence[int], separation: float | None = None) -> str:
    """One set's figures on one line: answers kept, near misses passed, off topic passed, query AUROC."""
    text = (f"{name + ' ' + half:<22} answers kept {found[1]:>3}/{found[0]:<3}  "
            f"near misses passed {found[3]:>3}/{found[2]:<3}")
    if len(found) > 4 and found[4]:
        text += f"  off topic passed {found[5]:>3}/{found[4]}"
    if separation is not None:
        text += f"  query AUROC {separation:.2f}"
    return text


def query_auroc(corrector: Corrector, parts: dict[str, list[Row]], half: str) -> float:
    """How well the judge tells answerable questions from near misses: AUROC over the two, each question
    scored by its best passage (ties count half)."""
    rows = [(r, True) for r in parts["in corpus"] if r["half"] == half]
    rows += [(r, False) for r in parts["near miss"] if r["half"] == half]
    best = [max(corrector.judge(r["question"], r["passages"]).scores, default=-1.0) for r, _ in rows]
    return auroc(best, [answerable for _, answerable in rows])


def run(out: TextIO, bench: Path | None, *, evaluators: Sequence[str] = ("lexical",),
        names: Sequence[str] | None = None, halves: Sequence[str] = ("tune", "test"),
        thresholds: tuple[float, float] | None = None, recording: Path | None = None,
        prompt: str = "sufficiency", score_titles: bool = False) -> dict[str, Any]:
    """Print one line per judge, set and half; return the figures. The LLM judge ("llm", "auto") replays
    `recording` (its `prompt`), and its lines add LLM calls and prompt tokens per query, against grading each
    passage in its own call. `score_titles`: each passage judged as "title: text"."""
    from .llm_judge import judge_cost, recorded_judge

    sets = every_set(bench, names)
    results: dict[str, Any] = {}
    for spec in evaluators:
        judge = recorded_judge(spec, recording, prompt)
        corrector = Corrector(evaluator=judge or spec, policy=ActionPolicy(*thresholds) if thresholds else None,
                              score_titles=score_titles)
        out.write(f"\njudge {spec}{f' ({prompt} prompt, replaying {recording})' if judge else ''}"
                  f"{' scoring titles' if score_titles else ''} "
                  f"(thresholds {corrector.policy.upper:+.2f}/{corrector.policy.lower:+.2f})\n")
        for half in halves:
            for name, parts in sets.items():
                found = figures(corrector, {name: parts}, half)[name]
                separation = query_auroc(corrector, parts, half)
                results[f"{spec} {name} {half}"] = found
                results[f"{spec} {name} {half} query AUROC"] = separation
                text = line(name, half, found, separation)
                if judge is not None:
                    cost = judge_cost(judge, parts, half, prompt)
                    results[f"{spec} {name} {half} cost"] = cost
                    text += (f"  LLM calls/query {cost['calls']:.2f} (per document {cost['per_document_calls']:.2f})"
                             f"  prompt tokens/query {cost['tokens']:.0f} (per document "
                             f"{cost['per_document_tokens']:.0f})")
                out.write(text + "\n")
    return results


class Remembered(RetrievalEvaluator):
    """An evaluator whose evaluations are kept per (query, text): a threshold scan scores each pair once."""

    def __init__(self, evaluator: RetrievalEvaluator) -> None:
        self.evaluator = evaluator
        self.memory: dict[tuple[str, str], tuple[float, str]] = {}

    @property
    def thresholds(self) -> tuple[float, float]:
        """The remembered evaluator's thresholds."""
        return self.evaluator.thresholds

    def evaluate(self, query: str, texts: Sequence[str]) -> Evaluation:
        """Scores (and reasons) of `texts`, each pair evaluated once."""
        missing = [t for t in dict.fromkeys(texts) if (query, t) not in self.memory]
        if missing:
            found = self.evaluator.evaluate(query, missing)
            reasons = found.reasons or [""] * len(missing)
            self.memory.update(((query, t), (s, r)) for t, s, r in zip(missing, found.scores, reasons))
        pairs = [self.memory[(query, t)] for t in texts]
        return Evaluation([s for s, _ in pairs], reasons=[r for _, r in pairs])


def scan(out: TextIO, spec: str, uppers: Sequence[float], *, lower: float = -0.5, half: str = "tune",
         names: Sequence[str] | None = None, bench: Path | None = None) -> dict[float, dict[str, Any]]:
    """Figures of one judge on one half at each upper threshold (its pairs scored once)."""
    sets = judge_sets(SETS, names)
    if bench is not None:
        sets["popqa"] = popqa_sets(bench)
    remembered = Remembered(evaluator_from_spec(spec))
    found = {}
    for upper in uppers:
        corrector = Corrector(evaluator=remembered, policy=ActionPolicy(upper, min(lower, upper)))
        found[upper] = figures(corrector, sets, half)
        out.write(f"\n{spec} upper {upper:+.2f}\n" + "".join(line(n, half, v) + "\n" for n, v in found[upper].items()))
    return found


def run_entry_points(out: TextIO, bench: Path | None, *, names: Sequence[str] | None = None,
                     halves: Sequence[str] = ("tune", "test"), recording: Path | None = None) -> dict[str, Any]:
    """The default judge through every entry point (the abstain benchmark's), one line per entry point, set
    and half: what each hands its generator. With `recording`, the LLM judge replaying it instead: each entry
    point holds an LLM that answers crag's judge prompts from the recording (see `abstain.py`)."""
    from crag_shared.recorded import RecordedLLM

    from .abstain import core_answer, haystack_answers, llamaindex_answers, measure

    sets = every_set(bench, names)
    judge = RecordedLLM(recording) if recording is not None else None
    results: dict[str, Any] = {}
    for name, parts in sets.items():
        for half in halves:
            rows = {part: [r for r in found if r["half"] == half] for part, found in parts.items()}
            every = [r for found in rows.values() for r in found]
            answers = {"core": core_answer(judge), **llamaindex_answers(every, judge),
                       **haystack_answers(every, judge)}
            counts = {part: measure(found, answers) for part, found in rows.items() if found}
            for entry in answers:
                found_counts = (len(rows["in corpus"]), counts["in corpus"][entry]["answer_reached"],
                                len(rows["near miss"]), counts["near miss"][entry]["passage_text_reached"],
                                len(rows.get("off topic", [])),
                                counts["off topic"][entry]["passage_text_reached"] if "off topic" in counts else 0)
                results[f"{entry} {name} {half}"] = found_counts
                out.write(f"{entry:<30} " + line(name, half, found_counts) + "\n")
    return results
