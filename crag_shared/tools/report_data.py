"""What `crag report` reads: one row per query from a `crag run` output, a calibration's records or a log of
live queries (the `metadata["crag"]` / `CRAGReport` dicts the adapters record), and the figures drawn."""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..calibration import JudgedQuery, tradeoff
from ..files import json_lines
from ..policy import ActionPolicy
from ..rows import QUESTION, id_of, named
from ..summary import Summary, one_line

__all__ = ["BORDERLINE_ROWS", "Row", "common_thresholds", "latency", "percentile", "read_rows", "tradeoff_curve"]

#: Stages whose milliseconds the trace records, by step name.
TIMED = {"evaluate": "ms", "refine_internal": "ms", "refine_web": "ms", "result": "total_ms"}


#: The table lists at most this many queries nearest a threshold, and at most this many more whose
#: answer-bearing passage was refused; only those keep their summary (their card) while the file is read.
BORDERLINE_ROWS = 500
#: The longest question, abstention or fallback reason a row keeps (the table and counts show them).
TEXT_CHARS = 500


@dataclass
class Row:
    """One query of the report. `summary` (what its card shows) is kept only for the rows the table lists;
    `labels` says which passages hold an answer, where the record says; `refused`: one of those was turned
    away (its text did not reach the knowledge)."""

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
    error: str | None = None
    refused: bool = False
    summary: Summary | None = None

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


def _stages(trace: object, queries: int = 1, latency_ms: float | None = None) -> dict[str, float]:
    """Milliseconds per stage from a trace. `queries`: how many queries were corrected together (a `crag run`
    batch), whose trace times are the batch's: each is divided among them; `latency_ms` (the record's own
    figure, when it has one) is the query's total. A step that is not an object with a text name is the
    record's fault, named."""
    steps = trace.get("steps") if isinstance(trace, Mapping) else None
    found: dict[str, float] = {}
    for i, step in enumerate(steps if isinstance(steps, list) else ()):
        if not isinstance(step, Mapping) or not isinstance(step.get("step"), str):
            shown = type(step.get("step")).__name__ if isinstance(step, Mapping) else type(step).__name__
            raise ValueError(f"trace.steps[{i}].step: expected text, got {shown}")
        if step["step"] in TIMED:
            value = step.get(TIMED[step["step"]])
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                found[step["step"]] = found.get(step["step"], 0.0) + float(value) / queries
    if latency_ms is not None:
        found["result"] = latency_ms
    if "result" in found:
        rest = found["result"] - sum(v for k, v in found.items() if k != "result")
        if any(s.get("step") == "web_search" for s in steps or ()):
            found["rewrite + web search"] = max(0.0, rest)
    return found


def _batch(record: Mapping[str, object]) -> tuple[int, float | None]:
    """(queries corrected together, the record's own latency in ms) of a `crag run` line; (1, None) for others."""
    queries, latency = record.get("batched_queries", 1), record.get("latency_ms")
    if not isinstance(queries, int) or isinstance(queries, bool) or queries < 1:
        raise ValueError(f"batched_queries: expected a whole number of at least 1, got {queries!r}"[:200])
    if latency is not None and (not isinstance(latency, (int, float)) or isinstance(latency, bool) or latency < 0):
        raise ValueError(f"latency_ms: expected a non-negative number, got {latency!r}"[:200])
    return queries, None if latency is None else float(latency)


def _labels(record: Mapping[str, object], scores: Sequence[float]) -> list[bool] | None:
    labels = record.get("labels")
    if labels is None:
        return None
    if not isinstance(labels, list) or not all(isinstance(y, bool) for y in labels):
        raise ValueError("labels: expected a list of true or false")
    return labels if len(labels) == len(scores) else None


def row_of(number: int, record: Mapping[str, object]) -> Row:
    """A report row from one JSON line, its question and id read in the one row vocabulary
    (`crag_shared.rows`) and the rest as the one summary shape (`Summary.from_dict`); a line that is no CRAG
    record, or holds a field of the wrong kind, raises ValueError saying which."""
    found = named(record, QUESTION)
    question = one_line(str(found[1]), TEXT_CHARS) if found and found[1] is not None else ""
    identifier = one_line(id_of(record) or str(number), TEXT_CHARS)
    if "error" in record and "action" not in record:
        return Row(number, identifier, question, "failed", [], None, error=one_line(str(record["error"]), TEXT_CHARS))
    if not isinstance(record.get("scores"), list):
        raise ValueError("no `scores` list: not a crag run output, calibration record or CRAG metadata line")
    decide = record.get("action") is None  # calibration records: the action their thresholds give
    summary = Summary.from_dict({**record, "action": "unjudged"} if decide else record)
    if decide:
        if summary.thresholds is None:
            raise ValueError("neither an `action` nor `thresholds` to decide one")
        summary = summary.model_copy(update={"action": ActionPolicy(*summary.thresholds).decide(summary.scores).value})
    labels = _labels(record, summary.scores)
    kind = record.get("kind")
    fallbacks = [one_line(f"{f.step}: {f.reason}", TEXT_CHARS) + (" (the setup, not a fault)" if f.expected else "")
                 for f in summary.fallbacks]
    thresholds = (summary.thresholds.upper, summary.thresholds.lower) if summary.thresholds else None
    return Row(number, identifier, question, summary.action, summary.scores, thresholds, labels=labels,
               kind=kind if isinstance(kind, str) else None,
               abstention=one_line(summary.abstention.reason, TEXT_CHARS) if summary.abstention else None,
               web=bool(summary.web_urls) or bool(summary.rewritten_query), fallbacks=fallbacks,
               stages=_stages(summary.trace, *_batch(record)),
               refused=labels is not None and any(y and not summary.kept(i) for i, y in enumerate(labels)),
               summary=summary)


class _Listed:
    """The rows the table lists, chosen while the file streams by: the `BORDERLINE_ROWS` nearest a threshold
    and the first `BORDERLINE_ROWS` with a refused answer; every other row lets its summary go."""

    def __init__(self) -> None:
        self.nearest: list[tuple[float, int, Row]] = []  # a max-heap of the margins, by (-margin, -number)
        self.refusals: set[int] = set()

    def add(self, row: Row) -> None:
        if row.refused and len(self.refusals) < BORDERLINE_ROWS:
            self.refusals.add(row.number)
        if not math.isfinite(row.margin):
            self._let_go(row)
            return
        heapq.heappush(self.nearest, (-row.margin, -row.number, row))
        if len(self.nearest) > BORDERLINE_ROWS:
            self._let_go(heapq.heappop(self.nearest)[2])

    def _let_go(self, row: Row) -> None:
        if row.number not in self.refusals:
            row.summary = None


def read_rows(path: str | Path) -> list[Row]:
    """Every row of a JSONL file, read line by line; only the rows the table lists keep their summary (see
    `BORDERLINE_ROWS`), so memory grows with the number of queries, not with the size of their records. A
    malformed line raises ValueError naming the file and line."""
    rows = []
    listed = _Listed()
    for number, record in json_lines(path, "results"):
        try:
            if not isinstance(record, dict):
                raise ValueError(f"a JSON {type(record).__name__}, not an object")
            row = row_of(number, record)
        except (ValueError, RecursionError) as error:
            raise ValueError(f"{path}:{number}: {error}"[:300]) from None
        listed.add(row)
        rows.append(row)
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
