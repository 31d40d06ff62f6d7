"""`crag-bench haystack`: crag's components in Haystack pipelines, per query.

- the lexical `RetrievalRouter` in a pipeline (retriever → router) over PopQA's top-10 passages: p50/p90
  per query of the router's own run and of the whole pipeline run;
- `CRAG(evaluator="embedding")` with the pipeline's text embedder connected to `query_embedding`: how many
  times the text embedder runs per query in total, once its cosine scale is found (offline hashing embedders:
  a count, not a speed).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any, TextIO

from .popqa import TOP_K, popqa_records


def _percentiles(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {"p50_ms": 1000 * statistics.median(ordered), "p90_ms": 1000 * ordered[int(0.9 * (len(ordered) - 1))]}


def run(out: TextIO, bench: Path, *, queries: int = 100) -> dict[str, Any]:
    """Measure and print the figures; returns them."""
    from haystack import Document, Pipeline

    from crag_haystack import RetrievalRouter
    from crag_haystack.testing import FixedRetriever, HashingTextEmbedder, embedding_judged_pipeline

    retrieved = {r.question: [Document(content=p.text, meta={"title": p.title}) for p in r.passages[:TOP_K]]
                 for r in popqa_records(bench, queries)}
    router = RetrievalRouter()
    pipeline = Pipeline()
    pipeline.add_component("retriever", FixedRetriever(retrieved))
    pipeline.add_component("retrieval_router", router)
    pipeline.connect("retriever.documents", "retrieval_router.documents")
    alone: list[float] = []
    whole: list[float] = []
    for i, (question, documents) in enumerate(retrieved.items()):  # alternate: each text unseen once
        started = time.perf_counter()
        if i % 2:
            pipeline.run({"query": question})
        else:
            router.run(query=question, documents=documents)
        (whole if i % 2 else alone).append(time.perf_counter() - started)

    embedder = HashingTextEmbedder()
    judged = embedding_judged_pipeline(embedder)
    judged.get_component("crag").corrector.evaluator.scale()  # once per process and model: not per query
    scale_calls, embedder.calls = embedder.calls, 0
    for question, documents in retrieved.items():
        judged.run({"text_embedder": {"text": question}, "crag": {"query": question, "documents": documents}})
    figures: dict[str, Any] = {"queries": len(retrieved), "router_alone": _percentiles(alone),
                               "router_pipeline": _percentiles(whole),
                               "text_embedder_calls_per_query": embedder.calls / len(retrieved),
                               "text_embedder_calls_to_find_the_scale": scale_calls}
    out.write(f"Haystack, {len(retrieved)} PopQA questions x 10 passages\n")
    for name in ("router_alone", "router_pipeline"):
        f = figures[name]
        out.write(f"  lexical RetrievalRouter ({name.split('_')[1]}, half the questions each): "
                  f"p50 {f['p50_ms']:.2f} ms, p90 {f['p90_ms']:.2f} ms\n")
    out.write(f"  CRAG(evaluator='embedding'), the pipeline's query embedding connected: text embedder runs "
              f"{figures['text_embedder_calls_per_query']:.2f} per query (and {scale_calls} once, to find the "
              f"embedder's cosine scale)\n")
    return figures
