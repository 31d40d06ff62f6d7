"""CRAG in a LlamaIndex app, offline: python examples/llamaindex_quickstart.py

A VectorStoreIndex over a small corpus (the one shipped with crag-shared's demo), an offline hashing
embedding, recorded web pages (ReplaySearch) and three questions that trigger each CRAG action; then the
same engine without web search, abstaining on the question its corpus cannot answer.
LLM: OpenAI if OPENAI_API_KEY is set and llama-index-llms-openai is installed, Ollama if OLLAMA_HOST is
set and llama-index-llms-ollama is installed; otherwise a clearly labelled offline stand-in that quotes
the first knowledge line.
"""

from __future__ import annotations

import os

from llama_index.core import Document, Settings, VectorStoreIndex
from llama_index.core.query_engine import RetrieverQueryEngine

from crag_llamaindex import CRAGPostprocessor, CRAGQueryEngine
from crag_llamaindex.testing import HashingEmbedding, RuleLLM
from crag_shared import ReplaySearch
from crag_shared.demo import QUESTIONS, corpus, recorded_web_path


def pick_llm():
    if os.environ.get("OPENAI_API_KEY"):
        try:
            from llama_index.llms.openai import OpenAI

            return OpenAI(model="gpt-4o-mini"), "OpenAI gpt-4o-mini", "auto"
        except ImportError:
            pass
    if os.environ.get("OLLAMA_HOST"):
        try:
            from llama_index.llms.ollama import Ollama

            return Ollama(model="llama3.1", base_url=os.environ["OLLAMA_HOST"]), "Ollama llama3.1", "auto"
        except ImportError:
            pass
    # a real LLM judges the passages ("auto", CRAG's default where it holds an LLM); the stand-in cannot, so the
    # offline default judge does
    return RuleLLM(), "OFFLINE STAND-IN (no LLM configured): answers quote the first knowledge line", "default"


def main() -> None:
    Settings.llm, llm_name, judge = pick_llm()
    Settings.embed_model = HashingEmbedding()
    index = VectorStoreIndex.from_documents(
        [Document(text=p.text, id_=p.id, metadata={"title": p.title}) for p in corpus()])
    web = ReplaySearch(recorded_web_path())  # in production: SerpAPISearch() with SERPAPI_API_KEY
    print(f"LLM: {llm_name}; judge: {judge}\n")

    # 1) the one-line addition to an existing query engine
    engine = RetrieverQueryEngine.from_args(index.as_retriever(similarity_top_k=3),
                                            node_postprocessors=[CRAGPostprocessor(web_search=web, evaluator=judge)])
    print("RetrieverQueryEngine + CRAGPostprocessor:")
    response = engine.query(QUESTIONS[0])
    print(f"  {QUESTIONS[0]} -> {response}\n")

    # 2) the wrapping engine, with CRAG's verdict in response.metadata["crag"]
    crag_engine = CRAGQueryEngine.from_index(index, similarity_top_k=3, web_search=web, evaluator=judge)
    for question in QUESTIONS:
        response = crag_engine.query(question)
        crag = response.metadata["crag"]
        print(f"Q: {question}\n  action: {crag['action']}  scores: {[round(s, 2) for s in crag['scores']]}")
        if crag["rewritten_query"]:
            print(f"  web search: {crag['rewritten_query']!r}")
        print(f"  answer: {response}")
        for node in response.source_nodes:
            meta = node.node.metadata
            print(f"    source [{meta['crag_origin']} {node.score:+.2f}] {meta.get('url') or meta.get('title')}")
        print()

    # 3) without web search, retrieval judged Incorrect is not handed to the LLM: CRAG abstains
    offline = CRAGQueryEngine.from_index(index, similarity_top_k=3, evaluator=judge)
    response = offline.query(QUESTIONS[2])
    print(f"Without web search: {QUESTIONS[2]} -> {response}\n"
          f"  abstained: {response.metadata['crag']['abstention']['reason']}")


if __name__ == "__main__":
    main()
