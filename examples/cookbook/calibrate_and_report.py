"""Cookbook: CRAG's thresholds fitted on your own index from 30 questions with their answers, then a page
that shows what CRAG decided. Offline; nothing leaves the machine.

    python examples/cookbook/calibrate_and_report.py [OUT_DIR]

1. LlamaIndex: an index over `corpus.jsonl` → `crag_llamaindex.calibrate(index, "qa.jsonl")`;
2. Haystack: a BM25 retrieval pipeline over the same corpus → `crag_haystack.calibrate(pipeline, ...)`;
3. CRAG with the calibrated thresholds answers the 30 questions, each verdict logged as one JSON line;
4. `crag report` pages of the calibration and of the log.

Put your own index, embedding model, retriever and questions in their places. The index here embeds with
a stand-in (feature hashing), so it retrieves as crudely as word overlap does.
"""

import json
import sys
from pathlib import Path

from haystack import Document, Pipeline
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.document_stores.in_memory import InMemoryDocumentStore
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import TextNode

import crag_haystack
import crag_llamaindex
from crag_llamaindex import CRAGQueryEngine
from crag_llamaindex.testing import HashingEmbedding, RuleLLM
from crag_shared.tools.report import write_report

HERE = Path(__file__).resolve().parent


def main(out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    corpus = [json.loads(line) for line in (HERE / "corpus.jsonl").open(encoding="utf-8")]
    questions = HERE / "qa.jsonl"

    index = VectorStoreIndex([TextNode(text=p["text"], metadata={"title": p["title"]}) for p in corpus],
                             embed_model=HashingEmbedding())
    fitted = crag_llamaindex.calibrate(index, questions, similarity_top_k=5, progress=False)
    calibrated = fitted.choose(0.2)  # Eq. 2's upper threshold trades many answers for few near misses here
    calibrated.save(out / "thresholds.json")
    (out / "calibration.jsonl").write_text("".join(json.dumps(r) + "\n" for r in calibrated.records()))
    summary = calibrated.summary()
    print(f"LlamaIndex: {summary['questions']} questions ({summary['no_answer']} with no retrieved passage "
          f"holding the answer), {summary['near_miss_queries']} near-miss queries; Eq. 2: upper "
          f"{fitted.thresholds[0]:+.2f}, lower {fitted.thresholds[1]:+.2f}; {summary['chosen_by']}: upper "
          f"{summary['upper']:+.2f}, lower {summary['lower']:+.2f}")
    for row in calibrated.tradeoff:
        if row.upper in (fitted.thresholds[0], summary["upper"]):
            print(f"  upper {row.upper:+.2f}: answers kept {row.answers_kept}/{summary['answerable']}, near misses "
                  f"passed on {row.near_misses_passed}/{summary['near_miss_queries']}")

    store = InMemoryDocumentStore()
    store.write_documents([Document(content=p["text"], meta={"title": p["title"]}) for p in corpus])
    pipeline = Pipeline()
    pipeline.add_component("retriever", InMemoryBM25Retriever(store, top_k=5))
    bm25 = crag_haystack.calibrate(pipeline, questions, retriever="retriever", progress=False,
                                   out=out / "thresholds-haystack.json")
    print(f"Haystack (BM25): upper {bm25.thresholds[0]:+.2f}, lower {bm25.thresholds[1]:+.2f}")

    engine = CRAGQueryEngine.from_index(index, similarity_top_k=5, thresholds_path=str(out / "thresholds.json"),
                                        llm=RuleLLM())
    with (out / "crag-log.jsonl").open("w", encoding="utf-8") as log:
        for line in questions.open(encoding="utf-8"):
            question = json.loads(line)["question"]
            response = engine.query(question)
            log.write(json.dumps({"question": question, **response.metadata["crag"]}) + "\n")
    write_report(out / "calibration.jsonl", out / "calibration.html", "Calibration on the cookbook corpus")
    write_report(out / "crag-log.jsonl", out / "report.html", "CRAG on the cookbook questions")
    print(f"reports: {out / 'calibration.html'}, {out / 'report.html'}")
    return summary


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("crag-cookbook"))
