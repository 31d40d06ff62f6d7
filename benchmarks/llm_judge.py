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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crag_shared.corrector import Corrector
from crag_shared.evaluators import LLMEvaluator
from crag_shared.recorded import prompt_key

from .near_miss import Row

PARTS = ("in corpus", "near miss", "off topic")


class Capturing:
    """An LLM that keeps every prompt and answers nothing (the judge then scores offline: no matter here)."""

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
    for row in rows:
        corrector.judge(row["question"], row["passages"])
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
