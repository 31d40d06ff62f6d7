"""What an offline stand-in LLM answers to crag's judge prompt, so demos and tests that hand crag a stand-in LLM
judge with it as with a real one (an LLM judges where crag holds one)."""

from __future__ import annotations

import re

from ..evaluators.lexical import LexicalEvaluator

_DOCUMENT = re.compile(r'<document number="(\d+)">\n(.*?)\n</document>', re.S)
_QUESTION = re.compile(r"^Question: (.*)$", re.M)


def judge_reply(prompt: str) -> str | None:
    """The reply to a judge prompt (documents listed between `<document number="N">` tags, after a "Question:"
    line): per document "yes" where the lexical judge scores it at least its upper threshold, else "no", in the
    prompt's format ("N: yes" lines, or a bare "yes" when it asks about one document). None for any other prompt."""
    documents, question = _DOCUMENT.findall(prompt), _QUESTION.search(prompt)
    if not documents or question is None:
        return None
    judge = LexicalEvaluator()
    scores = judge.score(question.group(1), [text for _, text in documents])
    verdicts = ["yes" if score >= judge.thresholds[0] else "no" for score in scores]
    if "<number>" not in prompt:
        return verdicts[0]
    return "\n".join(f"{number}: {verdict}" for (number, _), verdict in zip(documents, verdicts))
