"""Offline stand-ins for Haystack examples, tests and benchmarks: a chat generator, embedders and a fixed
retriever (work on Haystack 2 and 3)."""

import re
from dataclasses import replace
from typing import Any

from haystack import Document, Pipeline, component, default_from_dict, default_to_dict
from haystack.dataclasses import ChatMessage

from crag_shared.testing import hashing_vector, judge_reply, keyword_reply

LABEL = "[offline stand-in generator]"


@component
class ExtractiveChatGenerator:
    """Answers by quoting the first knowledge line of the prompt (lines starting with "- "), clearly
    labelled, so an offline run shows which knowledge CRAG handed over without pretending to be a model.
    Keyword-rewrite prompts get the offline keyword extraction; crag's judge prompt, the lexical judge's
    verdicts (`judge_reply`)."""

    def __init__(self, label: str = LABEL) -> None:
        self.label = label
        self.prompts: list[str] = []

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component (Haystack's `to_dict` contract; secrets as env var names only)."""
        return default_to_dict(self, label=self.label)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ExtractiveChatGenerator":
        """Rebuild the component from `to_dict`'s output."""
        return default_from_dict(cls, data)

    def _reply(self, prompt: str) -> str:
        self.prompts.append(prompt)
        reply = keyword_reply(prompt) or judge_reply(prompt)
        if reply is not None:
            return reply
        knowledge = re.findall(r"^- (.+)$", prompt, re.M)
        return f"{self.label} {knowledge[0] if knowledge else 'I do not know.'}"

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]) -> dict[str, Any]:
        """Reply to the last message (see the class)."""
        return {"replies": [ChatMessage.from_assistant(self._reply(messages[-1].text or ""))]}

    @component.output_types(replies=list[ChatMessage])
    async def run_async(self, messages: list[ChatMessage]) -> dict[str, Any]:
        """Async `run`."""
        return self.run(messages)


@component
class ToolCallingChatGenerator:
    """A chat generator for Haystack's Agent, offline: it calls the first tool with the user's question,
    then answers with the start of what the tool returned, labelled. For examples and tests of CRAG as a
    tool; it is not a model."""

    def __init__(self, label: str = LABEL) -> None:
        self.label = label

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component (Haystack's `to_dict` contract)."""
        return default_to_dict(self, label=self.label)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ToolCallingChatGenerator":
        """Rebuild the component from `to_dict`'s output."""
        return default_from_dict(cls, data)

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage], tools: Any = None, **kwargs: Any) -> dict[str, Any]:
        """Call the first tool on a user question; answer from a tool's result."""
        from haystack.dataclasses import ToolCall

        last = messages[-1]
        if last.tool_call_result is not None:
            result = last.tool_call_result.result
            text = result if isinstance(result, str) else " ".join(getattr(part, "text", "") for part in result)
            answer = " ".join(text.split())[:300]
            return {"replies": [ChatMessage.from_assistant(f"{self.label} {answer}")]}
        listed = list(tools or [])
        if not listed:
            return {"replies": [ChatMessage.from_assistant(f"{self.label} I have no tool to look this up.")]}
        call = ToolCall(tool_name=listed[0].name, arguments={"query": last.text or ""})
        return {"replies": [ChatMessage.from_assistant(tool_calls=[call])]}

    @component.output_types(replies=list[ChatMessage])
    async def run_async(self, messages: list[ChatMessage], tools: Any = None, **kwargs: Any) -> dict[str, Any]:
        """Async `run`."""
        return self.run(messages, tools=tools, **kwargs)


@component
class HashingTextEmbedder:
    """An offline text embedder (feature hashing) with the interface of Haystack's text embedders."""

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.calls = 0  # how many texts it embedded: tests and benchmarks count query embeddings

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component (Haystack's `to_dict` contract; secrets as env var names only)."""
        return default_to_dict(self, dim=self.dim)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "HashingTextEmbedder":
        """Rebuild the component from `to_dict`'s output."""
        return default_from_dict(cls, data)

    @component.output_types(embedding=list[float])
    def run(self, text: str) -> dict[str, Any]:
        """The text's hashing embedding (counted in `calls`)."""
        self.calls += 1
        return {"embedding": hashing_vector(text, self.dim)}


@component
class HashingDocumentEmbedder:
    """The document-embedder counterpart of `HashingTextEmbedder`: fills `Document.embedding`."""

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.calls = 0

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component (Haystack's `to_dict` contract; secrets as env var names only)."""
        return default_to_dict(self, dim=self.dim)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "HashingDocumentEmbedder":
        """Rebuild the component from `to_dict`'s output."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, Any]:
        """Copies of the documents with their hashing embeddings."""
        self.calls += 1
        return {"documents": [replace(d, embedding=hashing_vector(d.content or "", self.dim)) for d in documents]}


@component
class FixedRetriever:
    """Returns the documents set for each query (benchmarks replaying recorded retrievals), none for others.
    Not serializable: it holds documents, not a store."""

    def __init__(self, documents_by_query: dict[str, list[Document]]) -> None:
        self.documents_by_query = documents_by_query

    @component.output_types(documents=list[Document])
    def run(self, query: str) -> dict[str, Any]:
        """The documents set for `query`."""
        return {"documents": list(self.documents_by_query.get(query, []))}


def crag_component_pipeline(retriever: Any, generator: Any, **crag_settings: Any) -> Pipeline:
    """retriever → `CRAG` → prompt builder (documents required) → generator, and `crag.abstention` →
    `no_answer`: the drop-in wiring the README shows, as benchmarks and tests run it."""
    from haystack.components.builders import ChatPromptBuilder

    from .components import CRAG, NoAnswerReply
    from .pipeline import DEFAULT_TEMPLATE

    pipeline = Pipeline()
    pipeline.add_component("retriever", retriever)
    pipeline.add_component("crag", CRAG(**crag_settings))
    pipeline.add_component("prompt_builder", ChatPromptBuilder(template=DEFAULT_TEMPLATE,
                                                               required_variables=["query", "documents"]))
    pipeline.add_component("generator", generator)
    pipeline.add_component("no_answer", NoAnswerReply())
    pipeline.connect("retriever.documents", "crag.documents")
    pipeline.connect("crag.documents", "prompt_builder.documents")
    pipeline.connect("prompt_builder.prompt", "generator.messages")
    pipeline.connect("crag.abstention", "no_answer.abstention")
    return pipeline


@component
class SearXNGDocumentsWebSearch:
    """A web-search component with the ecosystem's contract (`query` in; `documents` with title/link meta and
    the snippet as content, and `links`, out), over a SearXNG instance's JSON: the shape tavily-haystack,
    brave-haystack or serperdev-haystack give, pointed at a loopback server in tests and benchmarks."""

    def __init__(self, base_url: str, top_k: int = 10) -> None:
        self.base_url = base_url.rstrip("/")
        self.top_k = top_k

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component."""
        return default_to_dict(self, base_url=self.base_url, top_k=self.top_k)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SearXNGDocumentsWebSearch":
        """Rebuild the component."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document], links=list[str])
    def run(self, query: str) -> dict[str, Any]:
        """Search; the results as documents and links."""
        import httpx

        answer = httpx.get(f"{self.base_url}/search", params={"q": query, "format": "json"}, timeout=10)
        answer.raise_for_status()
        hits = answer.json()["results"][: self.top_k]
        documents = [Document(content=h.get("content") or "", meta={"title": h.get("title"), "link": h["url"]})
                     for h in hits]
        return {"documents": documents, "links": [h["url"] for h in hits]}


def embedding_judged_pipeline(text_embedder: HashingTextEmbedder) -> Pipeline:
    """text_embedder → CRAG(evaluator="embedding"), the query embedding connected, so CRAG embeds no query
    itself: run with {"text_embedder": {"text": q}, "crag": {"query": q, "documents": ...}}."""

    from .components import CRAG

    pipeline = Pipeline()
    pipeline.add_component("text_embedder", text_embedder)
    pipeline.add_component("crag", CRAG(evaluator="embedding", text_embedder=text_embedder,
                                        document_embedder=HashingDocumentEmbedder()))
    pipeline.connect("text_embedder.embedding", "crag.query_embedding")
    return pipeline
