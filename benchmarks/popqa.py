"""PopQA's bench records, read in crag's one row vocabulary (`crag_shared.rows`), as `crag run` reads them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from crag_shared.rows import Record, read_records

#: How many of its stored passages each question is asked with: the top 10, as the CRAG authors' code does.
TOP_K = 10


def popqa_records(bench: Path, queries: int | None = None) -> list[Record]:
    """The first `queries` records of `bench/popqa_ctxs.jsonl` (all when None), each passage named by its
    rank: PopQA's own passage ids repeat within a record (one Wikipedia passage retrieved twice)."""
    records = read_records(bench / "popqa_ctxs.jsonl", "PopQA records")[:queries]
    for record in records:
        record.passages = [replace(p, id=str(p.metadata.get("rank", i))) for i, p in enumerate(record.passages)]
    return records
