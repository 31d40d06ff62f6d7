"""CRAG as a tool for Haystack's Agent, offline: the agent searches a knowledge base through
`CorrectiveRetriever` (your retriever + CRAG), so it reads only what CRAG judged relevant, and hears
"no knowledge" instead of irrelevant passages.

    python examples/haystack_agent.py

A stand-in chat generator calls the tool; put your own tool-calling chat generator in its place.
"""

from haystack import Document
from haystack.components.agents import Agent
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.dataclasses import ChatMessage
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.tools import ComponentTool

from crag_haystack import CorrectiveRetriever, knowledge_text
from crag_haystack.testing import ToolCallingChatGenerator
from crag_shared.demo import corpus


def build_agent() -> Agent:
    """An Agent whose one tool is CRAG over a BM25 retriever on the demo corpus."""
    store = InMemoryDocumentStore()
    store.write_documents([Document(content=p.text, meta={"title": p.title}) for p in corpus()])
    search = CorrectiveRetriever(InMemoryBM25Retriever(store, top_k=3))
    tool = ComponentTool(component=search, name="search_knowledge", outputs_to_string={"handler": knowledge_text},
                         description="Search the knowledge base. Returns only knowledge CRAG judged relevant, "
                                     "or why there is none.")
    return Agent(chat_generator=ToolCallingChatGenerator(), tools=[tool])


def main() -> None:
    agent = build_agent()
    agent.warm_up()
    for question in ("Who designed the Sydney Opera House?", "What is the capital of Mongolia?"):
        result = agent.run(messages=[ChatMessage.from_user(question)])
        print(question, "->", result["messages"][-1].text)


if __name__ == "__main__":
    main()
