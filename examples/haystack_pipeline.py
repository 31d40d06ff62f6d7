"""CRAG in a Haystack pipeline, offline: python examples/haystack_pipeline.py

InMemoryDocumentStore + InMemoryBM25Retriever over a small corpus (the one shipped with crag-shared's
demo), recorded web pages (ReplayWebSearch) and three questions that trigger each CRAG action.
Generator: OpenAIChatGenerator if OPENAI_API_KEY is set, OllamaChatGenerator if OLLAMA_HOST is set and
ollama-haystack is installed; otherwise a clearly labelled offline stand-in that quotes the first
knowledge line.
"""

from __future__ import annotations

import os

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

from haystack import Document
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.document_stores.in_memory import InMemoryDocumentStore

from crag_haystack import ReplayWebSearch, build_crag_pipeline
from crag_haystack.testing import ExtractiveChatGenerator
from crag_shared.demo import QUESTIONS, corpus, recorded_web_path


def pick_generator():
    if os.environ.get("OPENAI_API_KEY"):
        from haystack.components.generators.chat import OpenAIChatGenerator

        return OpenAIChatGenerator(model="gpt-4o-mini"), "OpenAI gpt-4o-mini", "auto"
    if os.environ.get("OLLAMA_HOST"):
        try:
            from haystack_integrations.components.generators.ollama import OllamaChatGenerator

            return OllamaChatGenerator(model="llama3.1", url=os.environ["OLLAMA_HOST"]), "Ollama llama3.1", "auto"
        except ImportError:
            pass
    # a real LLM judges the documents ("auto", build_crag_pipeline's default); the stand-in cannot, so the
    # offline default judge does
    return (ExtractiveChatGenerator(), "OFFLINE STAND-IN (no LLM configured): answers quote the first knowledge line",
            "default")


def main() -> None:
    store = InMemoryDocumentStore()
    store.write_documents([Document(content=p.text, id=p.id, meta={"title": p.title}) for p in corpus()])
    generator, name, judge = pick_generator()
    web = ReplayWebSearch(str(recorded_web_path()))  # in production: SerpAPIWebSearch() + SERPAPI_API_KEY
    pipeline = build_crag_pipeline(InMemoryBM25Retriever(store, top_k=3), generator, web_search=web, evaluator=judge)
    print(f"Generator: {name}; judge: {judge}\n")
    for question in [*QUESTIONS, "Who painted the Zorblax Quux?"]:  # the last: no corpus passage, no web page
        result = pipeline.run({"query": question}, include_outputs_from={"gate", "web_search"})
        print(f"Q: {question}\n  action: {result['retrieval_router']['action']}  "
              f"scores: {[round(s, 2) for s in result['retrieval_router']['scores']]}")
        if "web_search" in result:
            print(f"  web links: {result['web_search']['links']}  issues: {result['web_search']['issues']}")
        if "no_answer" in result:  # CRAG abstained: the generator was not asked
            reply = result["no_answer"]["replies"][0]
            print(f"  answer (CRAG abstained, the reply says why): {reply.text}\n")
            continue
        print(f"  answer: {result['generator']['replies'][0].text}")
        for doc in result["gate"]["documents"]:  # what the prompt was built from
            where = doc.meta.get("url") or doc.meta.get("title")
            print(f"    source [{doc.meta['crag_origin']} {doc.score:+.2f}] {where}")
        print()


if __name__ == "__main__":
    main()
