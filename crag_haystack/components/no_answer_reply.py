"""NoAnswerReply: the pipeline's answer when CRAG abstains, written without asking the LLM."""

from typing import Any

from haystack import component, default_from_dict, default_to_dict
from haystack.dataclasses import ChatMessage

from crag_shared.adapter import NO_KNOWLEDGE_ANSWER, no_knowledge_why

from ..integration import BUILDERS, keep_earlier_type_string
from ..serialization import current_type


@component
class NoAnswerReply:
    """Turns a CRAG abstention into replies shaped like a chat generator's, so the generator is never asked
    to answer from irrelevant text (or from nothing). The reply says why after the answer ("CRAG found no
    reliable knowledge for this question: ..."; `say_why=False`: the answer alone), and its
    `meta["crag_abstention"]` holds the reason.

    Usage:

    ```python
    pipeline.add_component("no_answer", NoAnswerReply(answer="Sorry, I don't know."))
    pipeline.connect("crag.abstention", "no_answer.abstention")      # or "gate.abstention"
    result["no_answer"]["replies"][0].text
    ```
    """

    __module__ = BUILDERS  # its canonical, allowlisted home (see crag_haystack.integration)

    def __init__(self, answer: str = NO_KNOWLEDGE_ANSWER, say_why: bool = True) -> None:
        """
        :param answer: the text of the reply.
        :param say_why: follow the answer with why CRAG found no reliable knowledge.
        """
        if not isinstance(answer, str) or not answer.strip():
            raise ValueError("NoAnswerReply needs a non-empty answer text")
        if not isinstance(say_why, bool):
            raise TypeError(f"say_why must be True or False, got {type(say_why).__name__}")
        self.answer = answer
        self.say_why = say_why

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component (Haystack's `to_dict` contract; secrets as env var names only)."""
        return default_to_dict(self, answer=self.answer, say_why=self.say_why)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "NoAnswerReply":
        """Rebuild the component from `to_dict`'s output."""
        return default_from_dict(cls, current_type(cls, data))

    @component.output_types(replies=list[ChatMessage])
    def run(self, abstention: str) -> dict[str, Any]:
        """
        :param abstention: why CRAG abstained (the `abstention` output of `CRAG`, `KnowledgeGate` or
            `RetrievalRouter`).
        :returns: `replies`: one assistant message with the answer text and why.
        """
        text = f"{self.answer} {no_knowledge_why(abstention)}" if self.say_why else self.answer
        return {"replies": [ChatMessage.from_assistant(text, meta={"crag_abstention": abstention})]}


keep_earlier_type_string(NoAnswerReply, "no_answer_reply")
