"""`crag-bench calibrate-qa`: thresholds from questions and answers alone, against thresholds from labels.

PopQA (the 100 questions with recorded retrievals), halved by the md5 of the question as in `near-miss`:

- labelled: Eq. 2 on the tune half's records, each passage labelled by the records' `relevant` (CRAG's
  title rule), with each question's near-miss query added (`crag calibrate --data --near-misses`);
- from answers: `crag_llamaindex.calibrate` over a LlamaIndex retriever serving the same top-10 passages,
  given only (question, answers) of the tune half.

Both pairs are scored on the test half (never fitted on): Eq. 2 judgment accuracy with the records' labels
and near misses as negatives, and what the core hands on (`near-miss`'s PopQA figures: answers kept, near
misses passed on, off-topic passed on). Then the time to calibrate 200 questions, retrieval included,
through each framework's call on an index of the 2,500 PopQA passages.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, TextIO

from crag_shared.calibration import JudgedQuery, fit_thresholds, judged_scores, near_misses, objective_on, read_qa
from crag_shared.corrector import Corrector
from crag_shared.evaluators import LexicalEvaluator
from crag_shared.policy import ActionPolicy
from crag_shared.rows import Record

from .near_miss import figures, half, popqa_sets
from .popqa import TOP_K, popqa_records


def labelled_queries(judge: Corrector, records: list[Record]) -> list[JudgedQuery]:
    """Each record's top 10 labelled by `relevant`, scored through the judge's `judge` as calibration scores,
    and its near-miss query (as `--near-misses` builds it)."""
    queries = []
    for record in records:
        passages, labels = record.passages[:TOP_K], [bool(y) for y in record.labels[:TOP_K]]
        scores = judged_scores(judge, record.question, passages).scores
        queries.append(JudgedQuery(record.key, record.question, "labelled", scores, labels))
        missed = near_misses(labels, [p.text or "" for p in passages])
        if missed:
            queries.append(JudgedQuery(f"{record.key}#near-miss", record.question, "near_miss",
                                       [scores[i] for i in missed], [False] * len(missed)))
    return queries


def _from_answers(records: list[Record]) -> tuple[float, float]:
    from llama_index.core.schema import NodeWithScore, TextNode

    from crag_llamaindex import calibrate
    from crag_llamaindex.testing import FixedRetriever

    retriever = FixedRetriever({r.question: [NodeWithScore(node=TextNode(text=p.text, metadata={"title": p.title}),
                                                           score=p.score) for p in r.passages[:TOP_K]]
                                for r in records})
    found = calibrate(retriever, [(r.question, r.answers) for r in records], progress=False)
    return found.thresholds


def _timings(records: list[Record], bench: Path) -> dict[str, float]:
    """Seconds to calibrate 200 questions through each framework's call, retrieval from an index included."""
    from haystack import Document
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import TextNode

    import crag_haystack
    import crag_llamaindex
    from crag_llamaindex.testing import HashingEmbedding

    texts = sorted({p.text for r in records for p in r.passages if p.text and p.text.strip()})
    web = read_qa(bench / "popqa_web.jsonl")
    asked = {r.question for r in records}
    qa = [(r.question, r.answers) for r in records]
    qa += [(w.question, w.answers) for w in web if w.question not in asked][: 200 - len(qa)]
    index = VectorStoreIndex([TextNode(text=t) for t in texts if t.strip()], embed_model=HashingEmbedding())
    store = InMemoryDocumentStore()
    store.write_documents([Document(content=t) for t in texts])
    timings = {}
    started = time.perf_counter()
    crag_llamaindex.calibrate(index, qa, progress=False)
    timings["llamaindex"] = time.perf_counter() - started
    started = time.perf_counter()
    crag_haystack.calibrate(InMemoryBM25Retriever(store, top_k=10), qa, progress=False)
    timings["haystack"] = time.perf_counter() - started
    timings["questions"] = len(qa)
    timings["passages"] = len(texts)
    return timings


def run(out: TextIO, bench: Path, *, timing: bool = True) -> dict[str, Any]:
    """Print both calibrations on the test half, and the timings; return the figures."""
    records = popqa_records(bench)
    tune = [r for r in records if half(r.question) == "tune"]
    test = [r for r in records if half(r.question) == "test"]
    judge = Corrector(LexicalEvaluator(), fallback_evaluator=None)
    pairs = {"labelled": fit_thresholds(*zip(*[(q.scores, q.labels) for q in labelled_queries(judge, tune)]))
             .policy, "from answers": ActionPolicy(*_from_answers(tune))}
    held_out = labelled_queries(judge, test)
    sets = {"popqa": popqa_sets(bench)}
    results: dict[str, Any] = {"tune": len(tune), "test": len(test)}
    out.write(f"crag-bench calibrate-qa: PopQA, lexical judge; fitted on the tune half ({len(tune)} questions), "
              f"reported on the test half ({len(test)})\n")
    for name, policy in pairs.items():
        objective, accuracy = objective_on(held_out, (policy.upper, policy.lower))
        inside, kept, near, passed, off, off_passed = figures(Corrector(LexicalEvaluator(), policy), sets,
                                                              "test")["popqa"]
        results[name] = {"upper": policy.upper, "lower": policy.lower, "objective": objective, "accuracy": accuracy,
                         "kept": kept / inside, "near_passed": passed / near, "off_passed": off_passed / off}
        out.write(f"  {name:<13} upper {policy.upper:+.2f} lower {policy.lower:+.2f}: Eq. 2 {objective:.3f}, "
                  f"judgment accuracy {accuracy:.1%}; answers kept {kept}/{inside}, near misses passed on "
                  f"{passed}/{near}, off topic passed on {off_passed}/{off}\n")
    eq2 = (results["labelled"]["objective"] - results["from answers"]["objective"]) * 100
    gap = (results["labelled"]["accuracy"] - results["from answers"]["accuracy"]) * 100
    results["eq2_gap_points"], results["accuracy_gap_points"] = eq2, gap
    out.write(f"  labelled minus from answers: Eq. 2 {eq2:+.1f} points (goal: at most +2), judgment accuracy "
              f"{gap:+.1f} points (Ambiguous counts as neither right nor wrong there)\n")
    if timing:
        results["timings"] = found = _timings(records, bench)
        out.write(f"  calibrating {found['questions']:.0f} questions on an index of {found['passages']:.0f} "
                  f"passages, retrieval included: LlamaIndex {found['llamaindex']:.1f} s, Haystack "
                  f"{found['haystack']:.1f} s (goal: under 60 s)\n")
    return results
