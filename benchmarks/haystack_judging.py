"""A Haystack chat generator for the benchmarks: crag's judge prompts answered from a recording, the rest by
another generator. (No `from __future__ import annotations`: Haystack reads the socket types at run time.)"""

from typing import Any

from haystack import component
from haystack.dataclasses import ChatMessage

from crag_shared.recorded import RecordedLLM

from .llm_judge import JUDGE_MARK


@component
class JudgingGenerator:
    """Replays `judge` for crag's judge prompts; `answering` answers everything else."""

    def __init__(self, judge: RecordedLLM, answering: Any) -> None:
        self.judge = judge
        self.answering = answering

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]) -> dict[str, Any]:
        """The recorded verdicts, or the answering generator's reply."""
        prompt = messages[-1].text or ""
        if JUDGE_MARK in prompt:
            return {"replies": [ChatMessage.from_assistant(self.judge.complete(prompt))]}
        return self.answering.run(messages)
