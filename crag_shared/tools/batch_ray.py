"""`crag run --engine ray`: the same batch job on Ray Data, for data sets that outgrow one process.

Ray Data does the scheduling: the driver reads the pending jobs, `map_batches` sends batches of
`batch_size` queries to a pool of actors, each of which builds its Corrector (and loads the evaluator)
once, and the driver appends the results to `--out` in input order as they stream back, flushing after
each batch, exactly as the local engine does. Output lines are the local engine's (`record_lines`), so
rerunning either engine resumes the other's file.

`ray.init()` joins the cluster in `RAY_ADDRESS` when it is set, else starts a local one. On a remote
cluster crag-shared (with the evaluator's extras) must be installed on the workers, model paths must
exist there, and web search keys are read from the workers' environment: they are never shipped.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, TextIO

from ..config import CRAGConfig
from ..corrector import Corrector
from ..types import Passage
from ..web.spec import web_search_from_spec
from .batch import Job, exclusive, pending_jobs, record_lines, write_all

__all__ = ["INSTALL_HINT", "connect", "run_on_ray"]

INSTALL_HINT = "the Ray engine needs Ray Data: pip install 'crag-shared[ray]'"


def _require_ray() -> Any:
    try:
        import ray
        import ray.data
    except ImportError as error:  # pragma: no cover - exercised only without the extra
        raise ImportError(INSTALL_HINT) from error
    return ray


def connect() -> None:
    """Join the cluster in `RAY_ADDRESS`, else start a local one (once per process), quietly: our progress
    bar and summary say how the job goes."""
    ray = _require_ray()
    if not ray.is_initialized():
        ray.init(include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    logging.getLogger("ray.data").setLevel(logging.WARNING)


def _job_row(job: Job) -> dict[str, str]:
    """A job as one string column, so Arrow never reshapes passages or their optional fields."""
    return {"job": json.dumps([job.id, job.question, [[p.text, p.id, p.title] for p in job.passages], job.labels])}


def _job(row: str) -> Job:
    job_id, question, passages, labels = json.loads(row)
    return Job(job_id, question, [Passage(text, id=pid, title=title) for text, pid, title in passages], labels)


class CorrectBatch:
    """The actor: one Corrector per actor, built from the plain config (and web spec) it was sent."""

    def __init__(self, config: dict[str, Any], web: str) -> None:
        self.corrector = Corrector.from_config(CRAGConfig.from_dict(config), web_search=web_search_from_spec(web))

    def __call__(self, batch: dict[str, Any]) -> dict[str, list]:
        lines = record_lines(self.corrector, [_job(row) for row in batch["job"]])
        return {"line": [line for line, _ in lines], "failed": [failed for _, failed in lines]}


def run_on_ray(config: CRAGConfig, data: str | Path, out: str | Path, *, web: str = "none", batch_size: int = 32,
               limit: int | None = None, actors: int = 1, num_gpus: float = 0.0, progress: bool = True,
               log: TextIO | None = None) -> dict[str, int]:
    """Every job not yet in `out`, corrected by `actors` Ray actors (`num_gpus` each), appended in order."""
    ray = _require_ray()
    out = Path(out)
    with exclusive(out):
        jobs, skipped = pending_jobs(data, out, limit)
        if not jobs:
            return write_all(out, [], 0, skipped, progress=progress, log=log)
        connect()
        context = ray.data.DataContext.get_current()
        context.execution_options.preserve_order = True  # results are written in input order, as locally
        context.enable_progress_bars = False  # one progress bar: ours, by query
        blocks = -(-len(jobs) // batch_size)  # one block per batch: actors start on the first batch at once
        dataset = ray.data.from_items([_job_row(job) for job in jobs], override_num_blocks=blocks)
        corrected = dataset.map_batches(CorrectBatch, fn_constructor_kwargs={"config": config.to_dict(), "web": web},
                                        batch_size=batch_size, batch_format="numpy",
                                        compute=ray.data.ActorPoolStrategy(size=actors), num_gpus=num_gpus or None)
        batches = (list(zip(batch["line"].tolist(), batch["failed"].tolist()))
                   for batch in corrected.iter_batches(batch_size=batch_size, batch_format="numpy"))
        return write_all(out, batches, len(jobs), skipped, progress=progress, log=log)
