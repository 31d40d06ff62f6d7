"""`crag run --engine ray` on a tiny local Ray cluster: the same lines as the local engine, resumable."""

from __future__ import annotations

import json

import pytest

from crag_shared.config import CRAGConfig
from crag_shared.corrector import Corrector
from crag_shared.tools.batch import run
from crag_shared.tools.cli import main

pytest.importorskip("ray.data")
pytestmark = pytest.mark.slow  # starts a local Ray cluster


def _comparable(value):
    """A record without how its run went: timings, and how many queries shared its batch (Ray's blocks may
    split a batch where the local engine does not). The decisions, scores, strips and trace steps remain."""
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items()
                if k not in ("ms", "total_ms", "latency_ms", "batched_queries")}
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    return value


def _records(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def ray_cluster():
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.mark.slow
def test_ray_engine_writes_what_the_local_engine_writes_and_resumes(ray_cluster, tmp_path, capsys):
    from crag_shared.tools.batch_ray import run_on_ray

    data = tmp_path / "in.jsonl"
    rows = [{"id": f"q{i}", "question": f"who wrote book {i}?",
             "ctxs": [{"title": f"Book {i}", "text": f"Book {i} was written by author {i} in {1900 + i}."},
                      {"title": "Weather", "text": "It rained all day in the valley."}]} for i in range(7)]
    rows.append({"id": "bad", "question": "an empty passage", "ctxs": [{"title": "x", "text": ""}]})
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = CRAGConfig(evaluator="lexical")
    local, on_ray = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    run(Corrector.from_config(config), data, local, batch_size=3, progress=False)

    run_on_ray(config, data, on_ray, batch_size=3, limit=4, progress=False)  # as if stopped after 4
    assert [r["id"] for r in _records(on_ray)] == ["q0", "q1", "q2", "q3"]
    counts = run_on_ray(config, data, on_ray, batch_size=3, progress=False)
    assert counts["skipped"] == 4 and counts["done"] + counts["failed"] == 4
    assert [_comparable(r) for r in _records(on_ray)] == [_comparable(r) for r in _records(local)]
    assert [r["strips"] for r in _records(on_ray)] == [r["strips"] for r in _records(local)]

    again = tmp_path / "cli.jsonl"
    assert main(["run", "--data", str(data), "--out", str(again), "--engine", "ray", "--batch-size", "2"]) == 0
    assert [_comparable(r) for r in _records(again)] == [_comparable(r) for r in _records(local)]
    assert "8 corrected, 0 failed, 0 already in" in capsys.readouterr().out
