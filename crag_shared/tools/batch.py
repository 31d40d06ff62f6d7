"""`crag run`: CRAG over a whole data set, as the paper's own code is run (a batch job), resumable.

Input rows are PopQA/CRAG-style records (`question` + `ctxs` with `title`/`text`) or pair rows (one row
per passage, grouped by query), read in the one row vocabulary (`crag_shared.rows`). Each output line is
one query's result: action, scores, knowledge strips with provenance, each retrieved passage as judged
(its title, first words, score and reason: what `crag report`'s card shows, bounded by
`crag_shared.summary.PASSAGES_LISTED` and `PREVIEW_CHARS`), rewritten query, web URLs and the trace; or its
error. When the input says which passages hold an answer (`answers`, or a label on every passage), the
line keeps that as `labels`, one per passage.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from ..calibration import holds_answer
from ..corrector import Corrector
from ..rows import Record, read_records
from ..types import CorrectionResult, FailedCorrection, Passage

__all__ = ["Job", "exclusive", "json_line", "pending_jobs", "read_jobs", "record", "record_lines", "run", "write_all"]


@dataclass(frozen=True)
class Job:
    """One query of the data set: its id (for resuming), question, retrieved passages and, when the input
    says, which passages hold an answer."""

    id: str
    question: str
    passages: list[Passage]
    labels: list[bool] | None = None


def read_jobs(path: str | Path) -> Iterator[Job]:
    """Jobs in file order, read in the one row vocabulary (`crag_shared.rows`): a record, or the pair rows of
    one question gathered; a job's id is its record's key (its own id, else its content's hash). A malformed
    line raises, naming the file, the line and the field."""
    for record in read_records(path, "--data", max_bytes=None):
        yield Job(record.key, record.question, record.passages, answer_labels(record))


def answer_labels(record: Record) -> list[bool] | None:
    """Which passages hold an answer: a passage's own label, else whether its text holds one of the record's
    `answers` (`holds_answer`); None when some passage has neither."""
    labels = [label if label is not None else holds_answer(passage.text or "", record.answers) if record.answers
              else None for passage, label in zip(record.passages, record.labels)]
    return None if not labels or any(y is None for y in labels) else [bool(y) for y in labels]


def unique_jobs(jobs: Iterable[Job], path: str | Path) -> list[Job]:
    """The jobs, refusing two with one id (ids compare as text: 1 and "1" are one id): a resumed run would
    take the second for done."""
    seen: set[str] = set()
    listed = list(jobs)
    for job in listed:
        if job.id in seen:
            raise ValueError(f"{path}: id {job.id!r} is used by two records; give each record its own id")
        seen.add(job.id)
    return listed


def finished_ids(path: Path) -> set[str]:
    """Ids already written. Every complete line must be a `crag run` record: any other file is refused,
    never truncated. A last line cut by a crash (no newline) is removed, so it is redone."""
    if not path.exists():
        return set()
    done, keep = set(), 0
    with path.open("rb") as lines:
        for number, line in enumerate(lines, 1):
            if not line.endswith(b"\n"):  # torn by a crash: drop it, the record is redone
                break
            parsed = _output_record(line)
            if parsed is None:
                raise ValueError(f"{path}:{number} is not a crag run record: --out must be a new file or one that "
                                 "crag run wrote (refusing to overwrite it)")
            done.add(parsed)
            keep += len(line)
    if keep != path.stat().st_size:
        with path.open("r+b") as handle:
            handle.truncate(keep)
    return done


def _output_record(line: bytes) -> str | None:
    """The id of a line `record` wrote, or None for any other line."""
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if isinstance(data, dict) and "id" in data and "question" in data and ("action" in data or "error" in data):
        return str(data["id"])
    return None


def record(job: Job, result: CorrectionResult | FailedCorrection) -> dict[str, Any]:
    """One output line of `crag run`: the job's id and question, and the result in full (`to_dict(texts=True)`)
    with the passages' answer `labels` when known, or the error."""
    if isinstance(result, FailedCorrection):
        return {"id": job.id, "question": job.question, "error": result.error}
    labels = {"labels": job.labels} if job.labels is not None else {}
    return {"id": job.id, "question": job.question, **result.to_dict(texts=True), **labels}


def record_lines(corrector: Corrector, jobs: Sequence[Job]) -> list[tuple[str, bool]]:
    """One `correct_many` over `jobs`: each one's output line and whether it failed, in order (both
    engines run this). The queries are corrected together, so each line says how many (`batched_queries`) and
    its share of the batch's time (`latency_ms`): its trace's times are the batch's."""
    started = time.perf_counter()
    results = corrector.correct_many([(job.question, job.passages) for job in jobs])
    share = {"batched_queries": len(jobs),
             "latency_ms": round((time.perf_counter() - started) * 1000 / max(1, len(jobs)), 3)}
    return [(json_line({**record(job, result), **share}), isinstance(result, FailedCorrection))
            for job, result in zip(jobs, results)]


def json_line(value: object) -> str:
    """`value` as one JSON line that UTF-8 can write: text as is, unless it holds a lone surrogate (a
    record's `"\\ud800"` escape), which stays escaped, so the record is kept and its batch written."""
    line = json.dumps(value, ensure_ascii=False)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value)
    return line


def pending_jobs(data: str | Path, out: Path, limit: int | None) -> tuple[list[Job], int]:
    """The jobs not yet in `out` (at most `limit` in `out` in all), and how many are there already. `out`
    may not be the input itself."""
    if out.exists() and Path(data).exists() and out.samefile(data):
        raise ValueError(f"--out {out} is the input file: choose another output file")
    all_jobs = unique_jobs(read_jobs(data), data)
    done = finished_ids(out)
    jobs = [job for job in all_jobs if job.id not in done]
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
    with exclusive(out):
        jobs, skipped = pending_jobs(data, out, limit)
        batches = (record_lines(corrector, jobs[start:start + batch_size])
                   for start in range(0, len(jobs), batch_size))
        return write_all(out, batches, len(jobs), skipped, progress=progress, log=log)


@contextmanager
def exclusive(out: Path) -> Iterator[None]:
    """Hold `out`'s lock (a `.lock` file beside the real file, whatever name `out` reaches it by) for the whole
    run: a second `crag run` on the same output fails at once instead of writing the same records twice. A
    lock path that is a symbolic link is refused, never followed (it could point at any file)."""
    real = Path(os.path.realpath(out))
    lock_path = real.with_name(real.name + ".lock")
    try:
        descriptor = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise ValueError(f"{lock_path} is a symbolic link: crag run will not follow it; remove it") from None
        raise
    with os.fdopen(descriptor, "r+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ValueError(f"another crag run is writing {out}; wait for it or choose another --out") from None
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
