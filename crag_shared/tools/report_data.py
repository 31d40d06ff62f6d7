"""What `crag report` reads: one row per query from a `crag run` output, a calibration's records or a log of
live queries (the `metadata["crag"]` / `CRAGReport` dicts the adapters record), and the figures drawn."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..calibration import JudgedQuery, tradeoff
from ..files import json_lines
from ..policy import ActionPolicy
from ..rows import QUESTION, id_of, named

#: Stages whose milliseconds the trace records, by step name.
TIMED = {"evaluate": "ms", "refine_internal": "ms", "refine_web": "ms", "result": "total_ms"}


@dataclass
class Row:
    """One query of the report."""

    number: int
    id: str
    question: str
    action: str
    scores: list[float]
    thresholds: tuple[float, float] | None
    labels: list[bool] | None = None
    kind: str | None = None
    abstention: str | None = None
    web: bool = False
    fallbacks: list[str] = field(default_factory=list)
    stages: dict[str, float] = field(default_factory=dict)
    record: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @property
    def best(self) -> float | None:
        """The best passage score (None when nothing was scored)."""
        return max(self.scores) if self.scores else None

    @property
    def margin(self) -> float:
        """How far the best score is from the nearer threshold (inf when there is nothing to compare)."""
        if self.best is None or self.thresholds is None:
            return math.inf
        return min(abs(self.best - t) for t in self.thresholds)


def _thresholds(value: object) -> tuple[float, float] | None:
    if isinstance(value, Mapping) and all(isinstance(value.get(k), (int, float)) for k in ("upper", "lower")):
        return float(value["upper"]), float(value["lower"])
    return None


def _stages(trace: object) -> dict[str, float]:
    steps = trace.get("steps") if isinstance(trace, Mapping) else None
    found: dict[str, float] = {}
    for step in steps if isinstance(steps, list) else ():
        if isinstance(step, Mapping) and step.get("step") in TIMED:
            value = step.get(TIMED[step["step"]])
            if isinstance(value, (int, float)):
                found[step["step"]] = found.get(step["step"], 0.0) + float(value)
    if "result" in found:
        rest = found["result"] - sum(v for k, v in found.items() if k != "result")
        if any(isinstance(s, Mapping) and s.get("step") == "web_search" for s in steps or ()):
            found["rewrite + web search"] = max(0.0, rest)
    return found


def row_of(number: int, record: Mapping[str, Any]) -> Row:
    """A report row from one JSON line, its question and id read in the one row vocabulary
    (`crag_shared.rows`); a line that is no CRAG record raises ValueError saying what is missing."""
    found = named(record, QUESTION)
    question = str(found[1]) if found and found[1] is not None else ""
    identifier = id_of(record) or str(number)
    if "error" in record and "action" not in record:
        return Row(number, identifier, question, "failed", [], None, error=str(record["error"]), record=dict(record))
    scores = record.get("scores")
    if not isinstance(scores, list) or not all(isinstance(s, (int, float)) for s in scores):
        raise ValueError("no `scores` list: not a crag run output, calibration record or CRAG metadata line")
    thresholds = _thresholds(record.get("thresholds"))
    action = record.get("action")
    if not isinstance(action, str):
        if thresholds is None:
            raise ValueError("neither an `action` nor `thresholds` to decide one")
        action = ActionPolicy(*thresholds).decide(scores).value
    labels = record.get("labels")
    abstention = record.get("abstention")
    fallbacks = [f"{f.get('step')}: {f.get('reason')}" + (" (the setup, not a fault)" if f.get("expected") else "")
                 for f in record.get("fallbacks") or () if isinstance(f, Mapping)]
    return Row(number, identifier, question, action, [float(s) for s in scores], thresholds,
               labels=[bool(y) for y in labels] if isinstance(labels, list) and len(labels) == len(scores) else None,
               kind=record.get("kind") if isinstance(record.get("kind"), str) else None,
               abstention=str(abstention.get("reason")) if isinstance(abstention, Mapping) else None,
               web=bool(record.get("web_urls")) or bool(record.get("rewritten_query")),
               fallbacks=fallbacks, stages=_stages(record.get("trace")), record=dict(record))


def read_rows(path: str | Path) -> list[Row]:
    """Every row of a JSONL file; a malformed line raises ValueError naming the file and line."""
    rows = []
    for number, record in json_lines(path, "results"):
        try:
            if not isinstance(record, dict):
                raise ValueError(f"a JSON {type(record).__name__}, not an object")
            rows.append(row_of(number, record))
        except (ValueError, RecursionError) as error:
            raise ValueError(f"{path}:{number}: {error}"[:300]) from None
    if not rows:
        raise ValueError(f"{path}: no records")
    return rows


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile (`share` in [0, 1]) of `values`."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))]


def latency(rows: Iterable[Row]) -> dict[str, tuple[int, float, float]]:
    """Per stage: (queries that ran it, p50 ms, p95 ms)."""
    by_stage: dict[str, list[float]] = {}
    for row in rows:
        for stage, ms in row.stages.items():
            by_stage.setdefault(stage, []).append(ms)
    order = ["evaluate", "refine_internal", "rewrite + web search", "refine_web", "result"]
    return {("total" if s == "result" else s): (len(by_stage[s]), percentile(by_stage[s], 0.5),
                                                percentile(by_stage[s], 0.95)) for s in order if s in by_stage}


def common_thresholds(rows: Iterable[Row]) -> tuple[float, float] | None:
    """The thresholds most rows were judged with."""
    found = Counter(r.thresholds for r in rows if r.thresholds is not None)
    return found.most_common(1)[0][0] if found else None


def tradeoff_curve(rows: Sequence[Row], steps: int = 81) -> list[tuple[float, float, float, float]] | None:
    """With labels: for each upper threshold, (upper, share of positive queries whose best relevant passage
    reaches it, share of near-miss queries passed on, share of other negative queries passed on): the
    calibration's trade-off table (`crag_shared.calibration.tradeoff`) as shares."""
    queries = [JudgedQuery(r.id, r.question, "answerable" if any(r.labels) else
                           "near_miss" if r.kind == "near_miss" else "no_answer", r.scores, r.labels)
               for r in rows if r.labels is not None and r.scores]
    totals = [sum(q.kind == kind for q in queries) for kind in ("answerable", "near_miss", "no_answer")]
    if not totals[0]:
        return None

    def share(count: int, total: int) -> float:
        return count / total if total else math.nan

    uppers = [-1 + 2 * i / (steps - 1) for i in range(steps)]
    kept, near, other = totals
    return [(u, share(row.answers_kept, kept), share(row.near_misses_passed, near), share(row.no_answer_passed, other))
            for u, row in zip(uppers, tradeoff(queries, uppers))]
