"""Query rewriting for web search (paper section 4.5, Appendix A Table 5): a question → ≤ 3 keywords."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from .llm import LLM, NoLLMConfigured, check_llm
from .text.analysis import TOKENS, Analyzer, analyzer, check_language
from .text.detection import resolve
from .text.knowledge import table_words, word_set
from .text.words import STOPWORDS, fold

__all__ = ["PAPER_REWRITE_PROMPT", "Part", "QueryRewriter", "Rewrite", "key_phrases", "keyword_query"]

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


# -- keyword phrases, as written, for an offline search query: names and compounds kept whole ---------------
# Stopwords end a phrase, but not inside a name: "Johann Wolfgang von Goethe" and "Bank of England" (a name
# particle between capitalised words), "埃菲尔铁塔" and "巴拉克·奥巴马" (Chinese is cut into words, with
# jieba when it is installed, and only multi-character stopwords and grammatical particles end a phrase
# without it; a middle dot joins a transliterated name), "エッフェル塔" (adjacent katakana and kanji stay one).

#: Chinese particles that end a phrase even when no segmenter is installed (`tables/zh/particles.txt`).
PARTICLES = word_set("zh", "particles")
#: What may stand between two parts of a CJK name (`tables/mul/name_dots.txt`).
NAME_DOTS = word_set("mul", "name_dots")
#: The lower-case words that may stand inside a name between capitalised words (`tables/mul/name_links.txt`):
#: nobiliary and patronymic particles, and "of the" of titles ("Bank of England", "The Lord of the Rings").
NAME_PARTICLES = word_set("mul", "name_links")


#: jieba's part-of-speech tags that end a phrase (`tables/zh/phrase_end_tags.txt`): pronouns and question
#: words, prepositions, particles, conjunctions, modal particles, interjections, punctuation.
STOP_TAGS = table_words("zh", "phrase_end_tags")


def _segmented(analyzer: Analyzer, run: str) -> Iterator[tuple[str, bool, bool]]:
    """(piece, is a stopword, stands alone) along a Han run, cut for keywords: with jieba, its words, a verb
    standing alone (a name or a compound noun is not glued to the verb after it)."""
    if analyzer.segmented:
        import jieba.posseg

        for word in jieba.posseg.lcut(run):
            stop = word.flag.startswith(STOP_TAGS) or word.word in analyzer.stopwords or word.word in PARTICLES
            yield word.word, stop, word.flag == "v"
        return
    start = i = 0
    for piece, stop in analyzer.cut(run):
        i += len(piece)
        if stop and (len(piece) > 1 or piece in PARTICLES):
            if start < i - len(piece):
                yield run[start:i - len(piece)], False, False
            yield piece, True, False
            start = i
    if start < len(run):
        yield run[start:], False, False


Part = tuple[str, str, bool, int, int]  # (text, kind, stop, start, end); kind "solo": a verb on its own


def _parts(analyzer: Analyzer, text: str) -> list[Part]:
    """(part, kind, stop, start, end) in order; Han runs cut by `_segmented`."""
    parts: list[Part] = []
    for match in TOKENS.finditer(text):
        kind, piece = match.lastgroup or "", match.group()
        if kind == "han":
            at = match.start()
            for part, stop, solo in _segmented(analyzer, piece):
                parts.append((part, "solo" if solo else kind, stop, at, at + len(part)))
                at += len(part)
        elif kind == "hira":
            parts.append((piece, kind, True, match.start(), match.end()))
        elif kind == "kata":
            parts.append((piece, kind, piece in analyzer.stopwords, match.start(), match.end()))
        else:
            term = analyzer.term(piece)
            stop = term in analyzer.stopwords or piece.lower() in analyzer.stopwords
            parts.append((piece, kind, stop, match.start(), match.end()))
    return parts


def _capital(part: Part) -> bool:
    return part[1] == "word" and (part[0][:1].isupper() or part[0][:1].isdigit())


def links_name(words: Sequence[str], i: int, stop: Callable[[str], bool]) -> bool:
    """Whether `words[i]` is a name particle inside a name: between capitalised words that are not stopwords (a
    question's first word is capitalised too), alone or beside one other particle ("van" in "Ludwig van
    Beethoven", "of the" in "Lord of the Rings")."""
    def link(j: int) -> bool:
        return 0 <= j < len(words) and words[j] in NAME_PARTICLES

    def capital(j: int) -> bool:
        return 0 <= j < len(words) and words[j][:1].isupper() and not stop(words[j])

    return link(i) and (capital(i - 1) or (link(i - 1) and capital(i - 2))) and (
        capital(i + 1) or (link(i + 1) and capital(i + 2)))


def _links_names(parts: list[Part], i: int, text: str) -> bool:
    """Whether word `i` joins the capitalised words around it into one name (nothing but spaces between)."""
    lo, hi = max(0, i - 2), min(len(parts), i + 3)
    near = [p[0] if p[1] == "word" and all(not text[a[4]:b[3]].strip() for a, b in zip(parts[k:i], parts[k + 1:i + 1]))
            else "" for k, p in enumerate(parts[lo:hi], lo)]
    stops = {p[0] for p in parts[lo:hi] if p[2]}
    return parts[i][1] == "word" and links_name(near, i - lo, stops.__contains__)


def key_phrases(analyzer: Analyzer, text: str) -> list[str]:
    """Runs of content words as written: a stopword, punctuation or a change of capitalisation ends a run,
    except inside names (see the module docstring)."""
    parts = _parts(analyzer, text)
    runs: list[str] = []
    previous: Part | None = None
    for i, part in enumerate(parts):
        piece, kind, stop, start, _ = part
        if stop and not _links_names(parts, i, text):
            previous = None
            continue
        if previous is None:
            runs.append(piece)
        else:
            gap = text[previous[4]:start]
            cjk = not {"solo", "word"} & {kind, previous[1]}
            if cjk and (not gap or gap in NAME_DOTS):
                runs[-1] += gap + piece  # adjacent CJK pieces: one compound or name
            elif kind == "word" == previous[1] and not gap.strip() and (
                    _capital(part) == _capital(previous) or _links_names(parts, i, text)
                    or _links_names(parts, i - 1, text)):
                runs[-1] += " " + piece
            else:
                runs.append(piece)
        previous = part
    return runs


def keyword_query(question: str, max_keywords: int = 3, language: str = "en") -> str:
    """Offline rewrite in the question's language: runs of content words, split where capitalisation changes
    (names vs the rest); Chinese and Japanese content pieces between stopwords. `language` "auto" detects it."""
    language = resolve(language, question)
    if language != "en":
        found = key_phrases(analyzer(language), question)
        if not found:
            return question.strip()
        if len(found) > max_keywords:  # the longest pieces (names first in cased scripts), in question order
            ranked = sorted(range(len(found)), key=lambda i: (not found[i][:1].isupper(), -len(found[i])))
            found = [found[i] for i in sorted(ranked[:max_keywords])]
        return ", ".join(found)
    phrases: list[list[str]] = []
    previous_cap: bool | None = None
    found = [w for w in (re.sub(r"['’]s$", "", raw).strip(".-") for raw in _WORD.findall(question)) if w]
    for i, word in enumerate(found):
        cap = word[:1].isupper() or word[:1].isdigit()
        if links_name(found, i, lambda w: fold(w) in STOPWORDS):
            cap = True  # "of" in "Bank of England", "van" in "Ludwig van Beethoven": inside the name
        elif fold(word) in STOPWORDS:
            previous_cap = None
            continue
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
