"""Any Haystack chat generator as the core's LLM protocol (prompt in, text out)."""

from __future__ import annotations

import asyncio
from typing import Any, Protocol, runtime_checkable

from haystack.dataclasses import ChatMessage


@runtime_checkable
class ChatGenerator(Protocol):
    """What crag needs of a Haystack chat generator: `run(messages=[ChatMessage]) -> {"replies": [...]}`."""

    def run(self, messages: list[ChatMessage]) -> dict[str, Any]:
        """A Haystack chat generator's `run`: messages in, `replies` out."""
        ...


class HaystackChatLLM:
    """Sends the prompt as one user message and returns the first reply's text."""

    def __init__(self, chat_generator: ChatGenerator) -> None:
        if not isinstance(chat_generator, ChatGenerator):
            raise TypeError(f"chat_generator must be a Haystack chat generator (run(messages=...)), "
                            f"got {type(chat_generator).__name__}")
        self.chat_generator = chat_generator

    def complete(self, prompt: str) -> str:
        """The generator's reply text to `prompt` as a user message."""
        replies = self.chat_generator.run(messages=[ChatMessage.from_user(prompt)])["replies"]
        return (replies[0].text or "") if replies else ""

    async def acomplete(self, prompt: str) -> str:
        """Async `complete` (`run_async` when the generator has one)."""
        if hasattr(self.chat_generator, "run_async"):
            result = await self.chat_generator.run_async(messages=[ChatMessage.from_user(prompt)])
            replies = result["replies"]
            return (replies[0].text or "") if replies else ""
        return await asyncio.to_thread(self.complete, prompt)


def as_llm(chat_generator: ChatGenerator | None) -> HaystackChatLLM | None:
    """A chat generator as crag's `LLM`, or None without one; anything else is a TypeError."""
    return HaystackChatLLM(chat_generator) if chat_generator is not None else None


def warm_up_all(*parts: object) -> None:
    """Warm up evaluators and generators held by a component (each only if it has `warm_up`)."""
    for part in parts:
        if part is not None and hasattr(part, "warm_up"):
            part.warm_up()
