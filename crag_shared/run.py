"""`crag run`: CRAG over a whole data set, as the paper's own code is run (a batch job), resumable.

Input records are PopQA/CRAG-style (`question` + `ctxs` with `title`/`text`) or labelled pairs (one row
per passage, grouped by query). Each output line is one query's result: action, scores, knowledge strips
with provenance, rewritten query, web URLs and the trace; or its error.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from .corrector import Corrector
from .data import json_rows
from .types import CorrectionResult, FailedCorrection, Passage


@dataclass(frozen=True)
class Job:
    """One query of the data set: its id (for resuming), question and retrieved passages."""

    id: str
    question: str
    passages: list[Passage]


def read_jobs(path: str | Path) -> Iterator[Job]:
    """Jobs in file order. Pair rows of one query (by `query_id`/`question_id`, else the question) are
    gathered into one job; a malformed line names itself."""
    grouped: dict[str, Job] = {}
    for number, row in json_rows(path):
        try:
            if "ctxs" in row:
                job_id = str(row.get("id", row.get("idx", row.get("question_id", number))))
                passages = [_passage(c, f"{job_id}:{i}") for i, c in enumerate(row["ctxs"])]
                yield Job(job_id, str(row["question"]), passages)
                continue
            question = str(row.get("query", row.get("question")))
            job_id = str(row.get("query_id", row.get("question_id", question)))
            job = grouped.setdefault(job_id, Job(job_id, question, []))
            job.passages.append(_passage(row, f"{job_id}:{len(job.passages)}"))
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"{path}:{number}: not a record or pair ({type(error).__name__}: {error})") from None
    yield from grouped.values()


def _passage(row: dict[str, Any], default_id: str) -> Passage:
    text = row.get("text", row.get("passage"))
    if not isinstance(text, str):
        raise TypeError("a passage needs a text")
    title = row.get("title")
    title = str(title) if title not in (None, "") else None
    return Passage(text, id=str(row.get("id", default_id)), title=title)


def finished_ids(path: Path) -> set[str]:
    """Ids already written; a last line cut by a crash is removed, so it is redone."""
    if not path.exists():
        return set()
    done, keep = set(), 0
    with path.open("rb") as lines:
        for line in lines:
            try:
                done.add(str(json.loads(line)["id"]))
            except (ValueError, KeyError, TypeError):
                break
            keep += len(line)
    with path.open("r+b") as handle:
        handle.truncate(keep)
    return done


def record(job: Job, result: CorrectionResult | FailedCorrection) -> dict[str, Any]:
    if isinstance(result, FailedCorrection):
        return {"id": job.id, "question": job.question, "error": result.error}
    return {"id": job.id, "question": job.question, "action": result.action.value, "scores": result.scores,
            "thresholds": list(result.thresholds), "rewritten_query": result.rewritten_query,
            "web_urls": [r.url for r in result.web_results], "knowledge": [s.to_dict() for s in result.knowledge],
            "fallbacks": [f"{f.step}: {f.reason} -> {f.applied}" for f in result.fallbacks],
            "trace": result.trace.to_dict()}


def run(corrector: Corrector, data: str | Path, out: str | Path, *, batch_size: int = 32, limit: int | None = None,
        progress: bool = True, log: TextIO | None = None) -> dict[str, int]:
    """Correct every job not yet in `out`, `batch_size` queries per `correct_many`, appending and flushing
    after each batch: rerunning skips finished ids, and a crash loses at most the batch in flight."""
    from tqdm.auto import tqdm

    out = Path(out)
    done = finished_ids(out)
    jobs = [job for job in read_jobs(data) if job.id not in done]
    if limit is not None:
        jobs = jobs[: max(0, limit - len(done))]
    counts = {"skipped": len(done), "done": 0, "failed": 0}
    with out.open("a", encoding="utf-8") as sink, tqdm(total=len(jobs), desc="crag run", unit="query",
                                                       disable=not progress) as bar:
        for batch in _batches(jobs, batch_size):
            results = corrector.correct_many([(job.question, job.passages) for job in batch])
            for job, result in zip(batch, results):
                sink.write(json.dumps(record(job, result), ensure_ascii=False) + "\n")
                counts["failed" if isinstance(result, FailedCorrection) else "done"] += 1
            sink.flush()
            bar.update(len(batch))
    if log is not None:
        log.write(f"crag run: {counts['done']} corrected, {counts['failed']} failed, {counts['skipped']} already "
                  f"in {out}\n")
    return counts


def _batches(jobs: Sequence[Job], size: int) -> Iterator[Sequence[Job]]:
    for start in range(0, len(jobs), size):
        yield jobs[start:start + size]
