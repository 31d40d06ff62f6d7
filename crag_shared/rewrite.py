"""Query rewriting for web search (paper section 4.5, Appendix A Table 5): a question → ≤ 3 keywords."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .language import analyzer, check_language, resolve
from .llm import LLM, NoLLMConfigured, check_llm
from .text import STOPWORDS, fold

#: The paper's few-shot prompt (Appendix A, Table 5); `{question}` is filled in.
PAPER_REWRITE_PROMPT = """Extract at most three keywords separated by comma from the following dialogues and \
questions as queries for the web search, including topic background within dialogues and main intent within \
questions.
question: What is Henry Feilden's occupation?
query: Henry Feilden, occupation
question: In what city was Billy Carlson born?
query: city, Billy Carlson, born
question: What is the religion of John Gwynn?
query: religion of John Gwynn
question: What sport does Kiribati men's national basketball team play?
query: sport, Kiribati men's national basketball team play
question: {question}
query:"""

#: longer LLM "keywords" are prose or an echoed prompt, not a search query
MAX_QUERY_CHARS = 200
_WORD = re.compile(r"[\w][\w'’.-]*")


@dataclass(frozen=True)
class Rewrite:
    """The search query, how it was made ("llm" or "keywords"), and why a fallback was taken, if one was."""

    query: str
    method: str
    note: str | None = None


def keyword_query(question: str, max_keywords: int = 3, language: str = "en") -> str:
    """Offline rewrite in the question's language: runs of content words, split where capitalisation changes
    (names vs the rest); Chinese and Japanese content pieces between stopwords. `language` "auto" detects it."""
    language = resolve(language, question)
    if language != "en":
        found = analyzer(language).phrases(question)
        if not found:
            return question.strip()
        if len(found) > max_keywords:  # the longest pieces (names first in cased scripts), in question order
            ranked = sorted(range(len(found)), key=lambda i: (not found[i][:1].isupper(), -len(found[i])))
            found = [found[i] for i in sorted(ranked[:max_keywords])]
        return ", ".join(found)
    phrases: list[list[str]] = []
    previous_cap: bool | None = None
    for raw in _WORD.findall(question):
        word = re.sub(r"['’]s$", "", raw).strip(".-")
        if not word or fold(word) in STOPWORDS:
            previous_cap = None
            continue
        cap = word[:1].isupper() or word[:1].isdigit()
        if previous_cap is None or cap != previous_cap:
            phrases.append([])
        phrases[-1].append(word)
        previous_cap = cap
    if not phrases:
        return question.strip()
    if len(phrases) > max_keywords:  # keep names first, then the longest phrases, in question order
        ranked = sorted(range(len(phrases)), key=lambda i: (not phrases[i][0][:1].isupper(), -len(phrases[i])))
        keep = sorted(ranked[:max_keywords])
        phrases = [phrases[i] for i in keep]
    return ", ".join(" ".join(p) for p in phrases)


class QueryRewriter:
    """Rewrites a question into at most `max_keywords` comma-separated search keywords.

    With an `llm`, the paper's few-shot prompt (or your `template`, with a `{question}` slot) is used;
    without one, or when the LLM fails or answers nothing usable, an offline keyword extraction is used
    and the reason is returned for the trace. The original question is never replaced: it stays the
    query for strip scoring and for generation. The offline keywords keep the question's `language`.
    """

    def __init__(self, llm: LLM | None = None, *, template: str = PAPER_REWRITE_PROMPT,
                 max_keywords: int = 3, language: str = "en") -> None:
        if "{question}" not in template:
            raise ValueError("the rewrite template needs a {question} placeholder")
        if max_keywords < 1:
            raise ValueError(f"max_keywords must be at least 1, got {max_keywords}")
        self.llm = check_llm(llm) if llm is not None else None
        self.template = template
        self.max_keywords = max_keywords
        self.language = check_language(language)

    def _parse(self, reply: str) -> str:
        for line in (reply or "").splitlines():
            line = re.sub(r"^\s*(?:query|keywords?)\s*:\s*", "", line, flags=re.IGNORECASE).strip(" \"'`*")
            if line:
                keywords = [k.strip() for k in line.split(",") if k.strip()]
                return ", ".join(keywords[: self.max_keywords])
        return ""

    def _fallback(self, question: str, note: str | None) -> Rewrite:
        return Rewrite(keyword_query(question, self.max_keywords, self.language), "keywords", note)

    def rewrite(self, question: str) -> Rewrite:
        """The question as search keywords: the LLM's, else offline keywords (the reason noted)."""
        if self.llm is None:
            return self._fallback(question, None)
        try:
            reply = self.llm.complete(self.template.format(question=question))
        except NoLLMConfigured:
            return self._fallback(question, None)
        except Exception as error:  # a failing LLM must not take the query down
            return self._fallback(question, f"LLM rewrite failed ({type(error).__name__}: {error})")
        return self._finish(question, reply)

    async def arewrite(self, question: str) -> Rewrite:
        """Async `rewrite`."""
        if self.llm is None:
            return self._fallback(question, None)
        try:
            reply = await self.llm.acomplete(self.template.format(question=question))
        except NoLLMConfigured:
            return self._fallback(question, None)
        except Exception as error:
            return self._fallback(question, f"LLM rewrite failed ({type(error).__name__}: {error})")
        return self._finish(question, reply)

    def _finish(self, question: str, reply: object) -> Rewrite:
        if not isinstance(reply, str):
            raise TypeError(f"the rewrite LLM ({type(self.llm).__name__}) returned {type(reply).__name__}; "
                            "complete() and acomplete() must return str")
        query = self._parse(reply)
        problem = _unusable(query)
        if problem:
            return self._fallback(question, f"LLM rewrite {problem}")
        return Rewrite(query, "llm")


def _unusable(query: str) -> str | None:
    """Why an LLM's search query cannot be used (empty, too long, one word over and over), or None."""
    if not query:
        return "was empty"
    if len(query) > MAX_QUERY_CHARS:
        return f"was too long ({len(query)} characters)"
    words = [fold(w) for w in _WORD.findall(query)]
    if not words:
        return "had no words"
    if len(words) >= 4 and len(set(words)) <= len(words) // 3:
        return f"was degenerate (repeats {sorted(set(words))[:3]})"
    return None
