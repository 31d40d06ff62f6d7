"""`crag run`: CRAG over a whole data set, as the paper's own code is run (a batch job), resumable.

Input records are PopQA/CRAG-style (`question` + `ctxs` with `title`/`text`) or labelled pairs (one row
per passage, grouped by query). Each output line is one query's result: action, scores, knowledge strips
with provenance, rewritten query, web URLs and the trace; or its error.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from ..corrector import Corrector
from ..types import CorrectionResult, FailedCorrection, Passage
from .data import json_rows, passage_text, query_id, record_id, row_query


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
                job_id = record_id(row, number)
                passages = [_passage(c, f"{job_id}:{i}") for i, c in enumerate(row["ctxs"])]
                yield Job(job_id, str(row["question"]), passages)
                continue
            question = str(row_query(row))
            job_id = query_id(row, question)
            job = grouped.setdefault(job_id, Job(job_id, question, []))
            job.passages.append(_passage(row, f"{job_id}:{len(job.passages)}"))
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"{path}:{number}: not a record or pair ({type(error).__name__}: {error})") from None
    yield from grouped.values()


def _passage(row: dict[str, Any], default_id: str) -> Passage:
    text = passage_text(row)
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
    """One output line of `crag run`: the job's id and question, and the result in full (`to_dict(texts=True)`)
    or the error."""
    if isinstance(result, FailedCorrection):
        return {"id": job.id, "question": job.question, "error": result.error}
    return {"id": job.id, "question": job.question, **result.to_dict(texts=True)}


def record_lines(corrector: Corrector, jobs: Sequence[Job]) -> list[tuple[str, bool]]:
    """One `correct_many` over `jobs`: each one's output line and whether it failed, in order (both
    engines run this)."""
    results = corrector.correct_many([(job.question, job.passages) for job in jobs])
    return [(json.dumps(record(job, result), ensure_ascii=False), isinstance(result, FailedCorrection))
            for job, result in zip(jobs, results)]


def pending_jobs(data: str | Path, out: Path, limit: int | None) -> tuple[list[Job], int]:
    """The jobs not yet in `out` (at most `limit` in `out` in all), and how many are there already."""
    done = finished_ids(out)
    jobs = [job for job in read_jobs(data) if job.id not in done]
    if limit is not None:
        jobs = jobs[: max(0, limit - len(done))]
    return jobs, len(done)


def write_all(out: Path, batches: Iterable[list[tuple[str, bool]]], total: int, skipped: int, *, progress: bool,
              log: TextIO | None) -> dict[str, int]:
    """Append each batch of lines to `out` and flush it before taking the next: rerunning skips finished
    ids, and a crash loses at most the batches in flight."""
    from tqdm.auto import tqdm

    counts = {"skipped": skipped, "done": 0, "failed": 0}
    with out.open("a", encoding="utf-8") as sink, tqdm(total=total, desc="crag run", unit="query",
                                                       disable=not progress) as bar:
        for lines in batches:
            sink.write("".join(line + "\n" for line, _ in lines))
            sink.flush()
            failed = sum(failure for _, failure in lines)
            counts["failed"] += failed
            counts["done"] += len(lines) - failed
            bar.update(len(lines))
    if log is not None:
        log.write(f"crag run: {counts['done']} corrected, {counts['failed']} failed, {counts['skipped']} already "
                  f"in {out}\n")
    return counts


def run(corrector: Corrector, data: str | Path, out: str | Path, *, batch_size: int = 32, limit: int | None = None,
        progress: bool = True, log: TextIO | None = None) -> dict[str, int]:
    """The local engine: every job not yet in `out`, `batch_size` queries per `correct_many`, in this process."""
    out = Path(out)
    jobs, skipped = pending_jobs(data, out, limit)
    batches = (record_lines(corrector, jobs[start:start + batch_size]) for start in range(0, len(jobs), batch_size))
    return write_all(out, batches, len(jobs), skipped, progress=progress, log=log)
