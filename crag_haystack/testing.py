"""An offline stand-in chat generator for Haystack examples and tests (works on Haystack 2 and 3)."""

import re
from dataclasses import replace
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.dataclasses import ChatMessage

from crag_shared.testing import hashing_vector

LABEL = "[offline stand-in generator]"


@component
class ExtractiveChatGenerator:
    """Answers by quoting the first knowledge line of the prompt (lines starting with "- "), clearly
    labelled, so an offline run shows which knowledge CRAG handed over without pretending to be a model.
    Keyword-rewrite prompts get the offline keyword extraction."""

    def __init__(self, label: str = LABEL) -> None:
        self.label = label
        self.prompts: list[str] = []

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, label=self.label)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ExtractiveChatGenerator":
        return default_from_dict(cls, data)

    def _reply(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if "Extract at most three keywords" in prompt:
            from crag_shared.rewrite import keyword_query

            return "query: " + keyword_query(prompt.rsplit("question:", 1)[-1].split("\n")[0])
        knowledge = re.findall(r"^- (.+)$", prompt, re.M)
        return f"{self.label} {knowledge[0] if knowledge else 'I do not know.'}"

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]) -> dict[str, Any]:
        return {"replies": [ChatMessage.from_assistant(self._reply(messages[-1].text or ""))]}

    @component.output_types(replies=list[ChatMessage])
    async def run_async(self, messages: list[ChatMessage]) -> dict[str, Any]:
        return self.run(messages)


@component
class HashingTextEmbedder:
    """An offline text embedder (feature hashing) with the interface of Haystack's text embedders."""

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, dim=self.dim)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "HashingTextEmbedder":
        return default_from_dict(cls, data)

    @component.output_types(embedding=list[float])
    def run(self, text: str) -> dict[str, Any]:
        return {"embedding": hashing_vector(text, self.dim)}


@component
class HashingDocumentEmbedder:
    """The document-embedder counterpart of `HashingTextEmbedder`: fills `Document.embedding`."""

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.calls = 0

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, dim=self.dim)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "HashingDocumentEmbedder":
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, Any]:
        self.calls += 1
        return {"documents": [replace(d, embedding=hashing_vector(d.content or "", self.dim)) for d in documents]}
