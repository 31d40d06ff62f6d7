"""`crag export`: a `crag run` output as the rows evaluation tools read, one row a query, so CRAG's verdicts
sit beside their context-relevance metrics.

- `ragas`: a `SingleTurnSample` a line, read by `ragas.EvaluationDataset.from_jsonl`: `user_input`,
  `retrieved_contexts` (the knowledge strips CRAG handed on, in order; none when it abstained),
  `retrieved_context_ids` (when every strip has a source id), `reference` (the first gold answer, when known).
- `deepeval`: a `Golden` a line, read by `deepeval.dataset.EvaluationDataset().add_goldens_from_jsonl_file`:
  `input`, `retrieval_context`, `expected_output` (the first gold answer, when known), `name` (the query's id).

Each row carries CRAG's verdict too, under `crag` (ragas drops fields it does not know when it loads a row)
or `additional_metadata["crag"]` (deepeval): the query's id, the action, whether CRAG abstained and why
(`reason`), each passage's score, the thresholds, each strip's score and provenance, the evaluator's reason
for each lowered passage, and every gold answer. Gold answers come from the run's line when it carries
them, else from the run's input (`data`), matched by id. A query that failed in the run has no verdict to
export: it is left out and counted.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..files import json_lines
from ..rows import answers_of, read_records
from ..verdict import verdict_line
from .batch import json_line

__all__ = ["FORMATS", "export_run"]

FORMATS = ("ragas", "deepeval")


def verdict_of(record: Mapping[str, Any], answers: tuple[str, ...]) -> dict[str, Any]:
    """CRAG's verdict on one query of a `crag run` output, as an exported row carries it."""
    abstention = record.get("abstention")
    reason = abstention.get("reason") if isinstance(abstention, Mapping) else None
    steps = (record.get("trace") or {}).get("steps")
    steps = steps if isinstance(steps, list) else []
    lowered = next((s.get("reasons") for s in steps if isinstance(s, Mapping) and s.get("step") == "evaluate"), None)
    verdict = {"id": record.get("id"), "action": record["action"], "abstained": bool(record.get("abstained")),
               "reason": str(reason) if reason is not None else verdict_line(record),
               "scores": record.get("scores") or [], "thresholds": record.get("thresholds"),
               "strips": [{k: s.get(k) for k in ("score", "origin", "source_id", "title", "url")}
                          for s in record["strips"]],
               "answers": list(answers)}
    if lowered:
        verdict["passage_reasons"] = lowered
    return verdict


def export_row(record: Mapping[str, Any], answers: tuple[str, ...], form: str) -> dict[str, Any]:
    """One query of a `crag run` output as a row of `form` ("ragas" or "deepeval")."""
    contexts = [str(s["text"]) for s in record["strips"]]
    reference = answers[0] if answers else None
    verdict = verdict_of(record, answers)
    if form == "ragas":
        row: dict[str, Any] = {"user_input": record["question"], "retrieved_contexts": contexts}
        ids = [s.get("source_id") for s in record["strips"]]
        if ids and all(isinstance(i, str) for i in ids):
            row["retrieved_context_ids"] = ids
        if reference is not None:
            row["reference"] = reference
        return {**row, "crag": verdict}
    if form == "deepeval":
        row = {"input": record["question"], "retrieval_context": contexts}
        if reference is not None:
            row["expected_output"] = reference
        return {**row, "name": str(record.get("id")), "additional_metadata": {"crag": verdict}}
    raise ValueError(f"unknown export format {form!r}: one of {', '.join(FORMATS)}")


def _run_record(value: object, where: str) -> Mapping[str, Any] | None:
    """A `crag run` output line: its record, or None for a query that failed in the run; any other line,
    or a field of the wrong kind, raises, naming the line."""
    if not (isinstance(value, Mapping) and isinstance(value.get("question"), str) and "id" in value):
        raise ValueError(f"{where}: not a crag run output record (id, question, action and strips with their text)")
    if "error" in value and "action" not in value:
        return None
    wrong = [name for name, right in (
        ("action", isinstance(value.get("action"), str)),
        ("strips", isinstance(value.get("strips"), list) and all(
            isinstance(s, Mapping) and isinstance(s.get("text"), str) for s in value["strips"])),
        ("scores", isinstance(value.get("scores"), list) and all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for x in value["scores"])),
        ("thresholds", isinstance(value.get("thresholds"), Mapping) and all(
            isinstance(value["thresholds"].get(k), (int, float)) for k in ("upper", "lower"))),
        ("abstention", value.get("abstention") is None or isinstance(value["abstention"], Mapping)),
        ("fallbacks", isinstance(value.get("fallbacks") or [], list) and all(
            isinstance(f, Mapping) for f in value.get("fallbacks") or [])),
        ("trace", value.get("trace") is None or isinstance(value["trace"], Mapping))) if not right]
    if wrong:
        raise ValueError(f"{where}: not a crag run output record: `{wrong[0]}` is missing or of the wrong kind")
    return value


def export_run(results: str | Path, out: str | Path, form: str, *, data: str | Path | None = None
               ) -> dict[str, int]:
    """Write `results` (a `crag run` output) as `form` rows to `out`, replaced whole only once every row is
    written; the gold answers from each line, else from `data` (the run's input). Returns the counts: rows
    written, those with a reference, failed queries left out."""
    if form not in FORMATS:
        raise ValueError(f"unknown export format {form!r}: one of {', '.join(FORMATS)}")
    if Path(out).exists() and Path(out).samefile(results):
        raise ValueError(f"--out {out} is the run's output itself: choose another file")
    known = {r.key: r.answers for r in read_records(data, "--data", max_bytes=None)} if data is not None else {}
    counts = {"rows": 0, "with_reference": 0, "failed": 0}
    partial = Path(out).with_name(Path(out).name + ".partial")
    try:
        with partial.open("w", encoding="utf-8") as sink:
            for number, value in json_lines(results, "results", max_bytes=None):
                where = f"{results}:{number}"
                record = _run_record(value, where)
                if record is None:
                    counts["failed"] += 1
                    continue
                answers = answers_of(record, where) or known.get(str(record["id"]), ())
                sink.write(json_line(export_row(record, answers, form)) + "\n")
                counts["rows"] += 1
                counts["with_reference"] += bool(answers)
        if not counts["rows"] and not counts["failed"]:
            raise ValueError(f"{results}: no records")
        os.replace(partial, out)
    finally:
        partial.unlink(missing_ok=True)
    return counts
