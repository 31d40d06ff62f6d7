"""An LLM as the retrieval evaluator, with the paper's judge prompt (Table 6) and lenient parsing."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from typing import Literal

from ..llm import LLM, check_llm
from ..trace import log
from .base import Evaluation, RetrievalEvaluator

#: The paper's direct evaluator prompt (Appendix A, Table 6), used per document.
PAPER_JUDGE_PROMPT = (
    "Given a question, does the following document have exact information to answer the question? "
    "Answer yes or no only.\nQuestion: {question}\nDocument: {document}"
)

#: The same question asked once for all documents of a query.
BATCHED_JUDGE_PROMPT = (
    "Given a question, does each of the following documents have exact information to answer the "
    "question? Answer yes or no only, one line per document, in the form '<number>: yes' or "
    "'<number>: no'.\nQuestion: {question}\n{documents}"
)

def check_judge_prompt(prompt: str, mode: str) -> str:
    """A judge prompt must hold `{question}` and, per mode, `{documents}` (batched) or `{document}`."""
    needed = ("{question}", "{documents}" if mode == "batched" else "{document}")
    missing = [slot for slot in needed if slot not in prompt]
    if missing:
        raise ValueError(f"the {mode} judge prompt needs the placeholders {', '.join(missing)}")
    return prompt


YES, NO = 1.0, -1.0
#: Score of a verdict that could not be parsed: between the default thresholds, i.e. "not sure".
NEUTRAL = 0.0

_LEADING = re.compile(r"^[\s\"'`*_>#\-\[(]*(yes|no)\b", re.IGNORECASE)
_ANYWHERE = re.compile(r"\b(yes|no)\b", re.IGNORECASE)
_NUMBERED = re.compile(r"^\W*(?:doc(?:ument)?\s*)?(\d+)\s*[:.)\]\-–—]+\s*\**\s*(yes|no)\b", re.IGNORECASE)


def parse_verdict(reply: str) -> float | None:
    """'Yes.', 'NO', 'yes — because…' → ±1; None when the reply has no verdict or contradicts itself."""
    match = _LEADING.match(reply or "")
    if match:
        return YES if match.group(1).lower() == "yes" else NO
    found = {m.lower() for m in _ANYWHERE.findall(reply or "")}
    if len(found) == 1:
        return YES if found == {"yes"} else NO
    return None


def parse_numbered(reply: str, count: int) -> list[float | None]:
    """Read '1: yes' style lines; a lone verdict is accepted when there is exactly one document."""
    verdicts: list[float | None] = [None] * count
    for line in (reply or "").splitlines():
        match = _NUMBERED.match(line)
        if match:
            index = int(match.group(1)) - 1
            if 0 <= index < count and verdicts[index] is None:
                verdicts[index] = YES if match.group(2).lower() == "yes" else NO
    if count == 1 and verdicts[0] is None:
        verdicts[0] = parse_verdict(reply)
    return verdicts


class LLMEvaluator(RetrievalEvaluator):
    """Asks an LLM whether each document has exact information to answer the question.

    `mode="batched"` (default) judges all numbered documents of a query in one call; `"per_document"`
    sends the paper's prompt once per document (concurrently in async code). Yes → 1, no → -1; an
    unparsable verdict scores 0 (neutral, so it can trigger Ambiguous but never Correct or Incorrect) and
    leaves a note in the trace. In batched mode the LLM sees all documents at once, so a verdict may
    depend on its neighbours; use per-document mode when that matters more than cost.
    """

    default_thresholds = (0.5, -0.5)

    def __init__(self, llm: LLM, *, mode: Literal["batched", "per_document"] = "batched",
                 max_document_chars: int = 4000, prompt: str | None = None) -> None:
        if mode not in ("batched", "per_document"):
            raise ValueError(f"mode must be 'batched' or 'per_document', got {mode!r}")
        self.llm = check_llm(llm)
        self.mode = mode
        self.max_document_chars = max_document_chars
        self.prompt = check_judge_prompt(prompt or (BATCHED_JUDGE_PROMPT if mode == "batched" else PAPER_JUDGE_PROMPT),
                                         mode)

    def _prompts(self, query: str, texts: Sequence[str]) -> list[str]:
        docs = [t[: self.max_document_chars] for t in texts]
        if self.mode == "per_document":
            return [self.prompt.format(question=query, document=d) for d in docs]
        listing = "\n".join(f"Document {i}: {d}" for i, d in enumerate(docs, 1))
        return [self.prompt.format(question=query, documents=listing)]

    def _read(self, replies: list[str], count: int) -> Evaluation:
        if self.mode == "per_document":
            verdicts = [parse_verdict(r) for r in replies]
        else:
            verdicts = parse_numbered(replies[0], count)
        notes = [f"no verdict for document {i} in the LLM reply; scored neutral {NEUTRAL}"
                 for i, v in enumerate(verdicts, 1) if v is None]
        if count and len(notes) == count:  # a judge that never follows the format is a fault, not a verdict
            log(logging.WARNING, "LLM judge: no verdict could be read for any of {count} documents (all scored "
                "neutral {neutral}); check that the LLM answers in the judge prompt's format. Reply began: {reply}",
                count=count, neutral=NEUTRAL, reply=repr((replies[0] if replies else "")[:80]))
        return Evaluation([NEUTRAL if v is None else v for v in verdicts], notes)

    def evaluate(self, query: str, texts: Sequence[str]) -> Evaluation:
        """Ask the LLM, one call per query (or per document); unparsable verdicts score 0, noted."""
        if not texts:
            return Evaluation([])
        return self._read([self.llm.complete(p) for p in self._prompts(query, texts)], len(texts))

    async def aevaluate(self, query: str, texts: Sequence[str]) -> Evaluation:
        """Async `evaluate`."""
        if not texts:
            return Evaluation([])
        replies = await asyncio.gather(*(self.llm.acomplete(p) for p in self._prompts(query, texts)))
        return self._read(list(replies), len(texts))
