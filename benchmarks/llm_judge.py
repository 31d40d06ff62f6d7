"""The LLM judge on the judge sets, from recorded replies: prompts out, recordings in, figures out.

`crag-bench llm-prompts --out FILE` writes every prompt crag's LLM judge sends for the judge sets' questions
(BM25 top 5, as `crag-bench judges` retrieves them) and PopQA's: one JSON line per prompt, `{"key", "prompt"}`,
shuffled by key, so whoever answers them sees questions and documents only, never a label or a set's part.
Whoever acts as the LLM writes `{"key", "reply"}` lines; `crag-bench judges --evaluator llm --recording FILE`
replays them through the Corrector (`RecordedLLM`).

The prompts are captured from the judge itself (an LLM that records what it is asked), so they are exactly what
a user's LLM receives: the passages' titles, the cut to `max_document_chars`, the listing's tags.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any, TextIO

from crag_shared.corrector import Corrector
from crag_shared.evaluators import LLMEvaluator
from crag_shared.recorded import RecordedLLM, prompt_key

from .near_miss import Row

PARTS = ("in corpus", "near miss", "off topic")
#: What marks a prompt as crag's judge prompt (its documents' tags): a stand-in LLM replays those.
JUDGE_MARK = '<document number="'


class Capturing:
    """An LLM that keeps every prompt and answers nothing (the judge then scores offline: no matter here, and
    `judge_prompts_for` keeps those fallbacks out of the log)."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def complete(self, prompt: str) -> str:
        """Keep the prompt; reply with no verdict."""
        self.prompts.append(prompt)
        return ""

    async def acomplete(self, prompt: str) -> str:
        """Async `complete`."""
        return self.complete(prompt)


def judge_prompts_for(rows: Sequence[Row], *, prompt: str = "sufficiency", mode: str = "batched") -> list[str]:
    """The prompts the LLM judge sends for `rows`, every question asked (no skipped call), in row order."""
    llm = Capturing()
    corrector = Corrector(LLMEvaluator(llm, prompt=prompt, mode=mode, offline="lexical",  # type: ignore[arg-type]
                                       skip_below=None))
    log = logging.getLogger("crag")
    was, log.disabled = log.disabled, True
    try:
        for row in rows:
            corrector.judge(row["question"], row["passages"])
    finally:
        log.disabled = was
    return llm.prompts


def selected_rows(sets: dict[str, dict[str, list[Row]]], halves: Sequence[str]) -> list[Row]:
    """Every row of every set and part on `halves`."""
    return [row for parts in sets.values() for part in PARTS for row in parts.get(part, [])
            if row["half"] in halves]


def write_prompts(out: Path, prompts: Sequence[str]) -> int:
    """Write each distinct prompt once, shuffled by key; the number written."""
    unique = {prompt_key(p): p for p in prompts}
    with out.open("w", encoding="utf-8") as handle:
        for key in sorted(unique):
            handle.write(json.dumps({"key": key, "prompt": unique[key]}, ensure_ascii=False) + "\n")
    return len(unique)


def prompt_counts(sets: dict[str, dict[str, list[Row]]], halves: Sequence[str]) -> dict[str, Any]:
    """Questions per set and half: what a recording must cover."""
    return {name: {half: sum(1 for part in PARTS for r in parts.get(part, []) if r["half"] == half)
                   for half in halves} for name, parts in sets.items()}


def recorded_judge(spec: str, recording: Path | None, prompt: str) -> LLMEvaluator | None:
    """The LLM judge replaying `recording`, for the LLM judge's specs ("llm", "auto"); None for other specs.
    An LLM spec without a recording is a usage error, named."""
    from crag_shared.evaluators import evaluator_kind

    if evaluator_kind(spec) not in ("llm", "auto"):
        return None
    if recording is None:
        raise ValueError(f"--evaluator {spec} judges with an LLM: give --recording FILE (its recorded replies)")
    return LLMEvaluator(RecordedLLM(recording), prompt=prompt)


@cache
def _tokenizer() -> Any:
    from importlib.resources import files

    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(files("crag_reader") / "model" / "tokenizer.json"))


def tokens(texts: Sequence[str]) -> int:
    """WordPiece tokens of `texts` (the reader's MiniLM vocabulary, about 1.3 a word of English; an LLM's BPE
    counts differ by a few tenths)."""
    return sum(len(encoding.ids) for encoding in _tokenizer().encode_batch(list(texts), add_special_tokens=False))


def judge_cost(judge: LLMEvaluator, parts: dict[str, list[Row]], half: str, prompt: str) -> dict[str, float]:
    """LLM calls and prompt tokens per query that `judge` made for one set's half (the calls it skipped
    included), against grading each passage in its own call."""
    rows = [r for part in PARTS for r in parts.get(part, []) if r["half"] == half]
    llm = judge.llm
    assert isinstance(llm, RecordedLLM)
    before = len(llm.prompts)
    corrector = Corrector(judge)
    for row in rows:
        corrector.judge(row["question"], row["passages"])
    sent = llm.prompts[before:]
    one_each = judge_prompts_for(rows, prompt=prompt, mode="per_document")
    count = max(1, len(rows))
    return {"queries": len(rows), "calls": len(sent) / count, "tokens": tokens(sent) / count,
            "per_document_calls": len(one_each) / count, "per_document_tokens": tokens(one_each) / count}


def skip_scan(out: TextIO, sets: dict[str, dict[str, list[Row]]], specs: Sequence[str],
              margins: Sequence[float] = (0.0, 0.01, 0.02, 0.05, 0.1, 0.2)) -> dict[str, Any]:
    """What skipping the LLM call costs and saves, per offline judge and margin above its floor: answers lost
    (answerable questions whose every passage falls below the cut) per set, and off-topic and near-miss
    questions skipped, per half."""
    from crag_shared.evaluators import evaluator_from_spec
    from crag_shared.text.words import titled

    found: dict[str, Any] = {}
    for spec in specs:
        judge = evaluator_from_spec(spec)
        best = {(name, part, id(row)): max(judge.score(row["question"], [titled(p.text or "", p.title)
                                                                        for p in row["passages"]]))
                for name, parts in sets.items() for part, rows in parts.items() for row in rows}
        halves = {id(row): row["half"] for parts in sets.values() for rows in parts.values() for row in rows}
        out.write(f"\noffline judge {spec}: floor {judge.floor:+.3f}, lower threshold {judge.thresholds[1]:+.3f}\n")
        for margin in margins:
            cut = judge.floor + margin
            text = f"  skip below {cut:+.3f} (floor + {margin:.2f})"
            for half in ("tune", "test"):
                chosen = {key: score for key, score in best.items() if halves[key[2]] == half}
                lost = {name: _below(chosen, cut, "in corpus", name) for name in sets}
                found[f"{spec} {margin} {half}"] = {"lost": lost, "off topic": _below(chosen, cut, "off topic"),
                                                    "near miss": _below(chosen, cut, "near miss")}
                text += (f" | {half}: answers lost {sum(lost.values())} (at most {max(lost.values())} a set), "
                         f"off topic skipped {_below(chosen, cut, 'off topic')}/{_below(chosen, 2.0, 'off topic')}, "
                         f"near misses skipped {_below(chosen, cut, 'near miss')}/"
                         f"{_below(chosen, 2.0, 'near miss')}")
            out.write(text + "\n")
    return found


def _below(best: dict[tuple[str, str, int], float], cut: float, part: str, name: str | None = None) -> int:
    """Questions of `part` (of set `name`, else of every set) whose best offline score falls below `cut`."""
    return sum(1 for (n, p, _), score in best.items() if p == part and (name is None or n == name) and score < cut)
