"""Offline stand-ins for LlamaIndex apps: a hashing embedding, a rule-driven LLM, an LLM replaying a recording
and a fixed retriever (no downloads, no keys)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from llama_index.core import Settings
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events.base import BaseEvent
from llama_index.core.llms import LLM, CompletionResponse, CompletionResponseGen, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.schema import NodeWithScore, QueryBundle

from crag_shared.adapter import RecordedLLM as Recording
from crag_shared.testing import hashing_vector, judge_reply, keyword_reply


class HashingEmbedding(BaseEmbedding):
    """Bag-of-words vectors by feature hashing: deterministic, instant, and good enough for a demo index."""

    dim: int = Field(default=256, description="vector size")

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this class under."""
        return "HashingEmbedding"

    def _vector(self, text: str) -> list[float]:
        return hashing_vector(text, self.dim)

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vector(text)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)


def first_context_line(prompt: str) -> str:
    """The first line of the context block of LlamaIndex's QA prompt (what an extractive reader says)."""
    match = re.search(r"-{5,}\n(.*?)\n-{5,}", prompt, re.S)
    lines = [line for line in (match.group(1) if match else "").splitlines()
             if line.strip() and not re.match(r"^(title|url|file_name|file_path|source): ", line)]
    return lines[0].strip() if lines else ""


class RuleLLM(CustomLLM):
    """A deterministic LLM: `rule(prompt) -> reply`. Default rule: keyword rewrites answer "query: ...", crag's
    judge prompt is answered by the lexical judge's verdicts (`judge_reply`),
    question answering repeats the first context line, prefixed so it is never mistaken for a model."""

    label: str = Field(default="[offline stand-in LLM]")
    prompts: list[str] = Field(default_factory=list)
    _rule: Callable[[str], str] | None = PrivateAttr(default=None)

    def __init__(self, rule: Callable[[str], str] | None = None, **data: Any) -> None:
        super().__init__(**data)
        self._rule = rule

    @property
    def metadata(self) -> LLMMetadata:
        """A completion model's metadata."""
        return LLMMetadata(model_name="rule-llm", is_chat_model=False)

    def _reply(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if self._rule is not None:
            return self._rule(prompt)
        reply = keyword_reply(prompt) or judge_reply(prompt)
        if reply is not None:
            return reply
        return f"{self.label} {first_context_line(prompt)}".strip()

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        """The rule's reply."""
        return CompletionResponse(text=self._reply(prompt))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        """The rule's reply, word by word."""
        text, so_far = self._reply(prompt), ""
        for word in text.split(" "):
            delta = word if not so_far else " " + word
            so_far += delta
            yield CompletionResponse(text=so_far, delta=delta)


class FixedRetriever(BaseRetriever):
    """Returns the nodes set for each query (benchmarks replaying recorded retrievals), none for others."""

    def __init__(self, nodes_by_query: dict[str, list[NodeWithScore]]) -> None:
        self._nodes_by_query = nodes_by_query
        super().__init__()

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return list(self._nodes_by_query.get(query_bundle.query_str, []))


class EventRecorder(BaseEventHandler):
    """Keeps every instrumentation event it is sent (`recording_events()` attaches one to the root
    dispatcher), so a test can check what tracing would see."""

    events: list = Field(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this class under."""
        return "EventRecorder"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        """Keep the event."""
        self.events.append(event)


@contextmanager
def recording_events() -> Iterator[EventRecorder]:
    """An `EventRecorder` on LlamaIndex's root dispatcher for the block."""
    root = get_dispatcher()
    recorder = EventRecorder()
    root.add_event_handler(recorder)
    try:
        yield recorder
    finally:
        root.event_handlers.remove(recorder)


@contextmanager
def offline_settings() -> Iterator[None]:
    """`Settings.llm` and `Settings.embed_model` as the offline stand-ins (`RuleLLM`, `HashingEmbedding`) for
    the block, the app's own restored afterwards."""
    previous = Settings._llm, Settings._embed_model
    Settings.llm, Settings.embed_model = RuleLLM(), HashingEmbedding()
    try:
        yield
    finally:
        Settings._llm, Settings._embed_model = previous


class RecordedLLM(CustomLLM):
    """A LlamaIndex LLM that answers from a recording, keyed by the prompt (`crag_shared.RecordedLLM`): record
    once with your real LLM (`llm=`, `mode="record"` or `"auto"`), then replay it in CI with no key and no
    network (`mode="replay"`, the default; an unrecorded prompt raises `RecordingMissing`). Chat calls are
    recorded by the prompt LlamaIndex renders from the messages."""

    path: str = Field(description="the recording (JSON Lines)")
    mode: str = Field(default="replay", description="'replay', 'record' or 'auto'")
    _recording: Recording = PrivateAttr()
    _llm: LLM | None = PrivateAttr(default=None)

    def __init__(self, path: str, llm: LLM | None = None, *, mode: str = "replay", **data: Any) -> None:
        super().__init__(path=str(path), mode=mode, **data)
        self._llm = llm
        self._recording = Recording(path, mode=mode, records_elsewhere=llm is not None)  # type: ignore[arg-type]

    @property
    def metadata(self) -> LLMMetadata:
        """A completion model's metadata."""
        return LLMMetadata(model_name="recorded", is_chat_model=False)

    @property
    def calls(self) -> int:
        """The prompts answered so far (replayed or recorded)."""
        return self._recording.calls

    def _answer(self, prompt: str) -> str:
        reply = self._recording.replayed(prompt)
        if reply is not None:
            return reply
        assert self._llm is not None  # the recording refuses to record without one
        return self._recording.record(prompt, self._llm.complete(prompt).text)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        """The recorded reply (recording it first where the mode asks the LLM)."""
        return CompletionResponse(text=self._answer(prompt))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        """The recorded reply as one chunk."""
        text = self._answer(prompt)
        yield CompletionResponse(text=text, delta=text)
