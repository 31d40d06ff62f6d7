"""RecordedChatGenerator: a Haystack chat generator that answers from a recording, for pipelines tested offline."""

from typing import Any

from haystack import component, default_to_dict
from haystack.dataclasses import ChatMessage

from crag_shared.adapter import RecordedLLM

from .integration import GENERATORS
from .llm import ChatGenerator
from .serialization import from_dict_with_nested, nested_to_dicts

__all__ = ["RecordedChatGenerator"]


def prompt_of(messages: list[ChatMessage]) -> str:
    """The text a conversation is recorded under: a lone message's text (crag's own calls, so the core's
    recordings serve here too), else each message as "role: text", blank-line separated."""
    if len(messages) == 1:
        return messages[0].text or ""
    return "\n\n".join(f"{m.role.value}: {m.text or ''}" for m in messages)


@component
class RecordedChatGenerator:
    """Replies from a recording keyed by the prompt (`crag_shared.RecordedLLM`): record once with your real chat
    generator (`chat_generator=`, `mode="record"` or `"auto"`), then replay in CI without keys (`mode="replay"`,
    the default; an unrecorded prompt raises `RecordingMissing`). Use it wherever a chat generator goes: as the
    pipeline's generator, `CRAG(chat_generator=...)`, `build_crag_pipeline(..., judge_generator=...)`.

    Usage:
    ```python
    judge = RecordedChatGenerator("tests/recordings/judge.jsonl")          # in CI
    judge = RecordedChatGenerator("tests/recordings/judge.jsonl", OpenAIChatGenerator(), mode="auto")  # to record
    ```
    """

    __module__ = GENERATORS  # its canonical, allowlisted home (see crag_haystack.integration)

    def __init__(self, path: str, chat_generator: ChatGenerator | None = None, mode: str = "replay") -> None:
        self.path = str(path)
        self.chat_generator = chat_generator
        self.mode = mode
        self._recording = RecordedLLM(path, mode=mode,  # type: ignore[arg-type]
                                      records_elsewhere=chat_generator is not None)

    @property
    def calls(self) -> int:
        """The conversations answered so far."""
        return self._recording.calls

    def warm_up(self) -> None:
        """Warm up the generator that records, if it has a warm_up."""
        if self.chat_generator is not None and hasattr(self.chat_generator, "warm_up"):
            self.chat_generator.warm_up()

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component (the recording's path and mode, the recording generator's own form)."""
        return default_to_dict(self, path=self.path, mode=self.mode, **nested_to_dicts(self, ("chat_generator",)))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RecordedChatGenerator":
        """Rebuild the component from `to_dict`'s output."""
        return from_dict_with_nested(cls, data, ("chat_generator",))

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]) -> dict[str, list[ChatMessage]]:
        """The recorded reply to the conversation (recorded first where the mode asks the generator).

        :param messages: the conversation, as any chat generator takes it.
        :returns: `replies`: one assistant message, the recorded reply.
        """
        prompt = prompt_of(messages)
        reply = self._recording.replayed(prompt)
        if reply is None:
            assert self.chat_generator is not None  # the recording refuses to record without one
            replies = self.chat_generator.run(messages=messages)["replies"]
            reply = self._recording.record(prompt, (replies[0].text or "") if replies else "")
        return {"replies": [ChatMessage.from_assistant(reply)]}

    @component.output_types(replies=list[ChatMessage])
    async def run_async(self, messages: list[ChatMessage]) -> dict[str, list[ChatMessage]]:
        """Async `run`.

        :param messages: the conversation.
        :returns: as `run`.
        """
        return self.run(messages)
