"""Small text utilities shared by the lexical evaluator, the keyword rewriter and the refiner."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

WORD_RE = re.compile(r"\w+(?:['’]\w+)*", re.UNICODE)

# Function words and question words: they say nothing about which passage answers a question.
STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most
    my myself no nor not now of off on once only or other our ours ourselves out over own same she
    should so some such than that the their theirs them themselves then there these they this those
    through to too under until up very was we were what when where which while who whom whose why will
    with would you your yours yourself yourselves also may might must shall many much one ones get got
    name named called kind type
    """.split()
)


@lru_cache(maxsize=200_000)
def fold(word: str) -> str:
    """Lower-case, strip accents and a possessive, and reduce a plural: a cheap, language-light stem.

    Cached: the same words recur across passages, strips and queries, and this is the lexical hot path."""
    if word.isascii():  # no accents to strip: skip Unicode normalisation
        word = word.lower()
    else:
        word = unicodedata.normalize("NFKD", word.casefold())
        word = "".join(c for c in word if not unicodedata.combining(c))
    if word.endswith(("'s", "’s")):
        word = word[:-2]
    word = word.replace("’", "'")
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def words(text: str) -> list[str]:
    """The raw word tokens of a text, in order."""
    return WORD_RE.findall(text)


def terms(text: str) -> list[str]:
    """Folded tokens, stop words included, in order (positions matter for phrase matching)."""
    return [fold(w) for w in words(text)]


def content_terms(text: str) -> list[str]:
    """The folded content words of `text` (no stopwords)."""
    return [t for t in terms(text) if t not in STOPWORDS]


_CJK_CHAR = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def word_count(text: str) -> int:
    """The number of whitespace-separated words; Chinese and Japanese, written without spaces, count a
    word per two characters."""
    count = len(text.split())
    return count + len(_CJK_CHAR.findall(text)) // 2 if not text.isascii() else count


def titled(text: str, title: str | None) -> str:
    """"title: text", the form evaluators see with `score_titles=True`, unless the text already starts with
    its title. Continuation passages ("He was elected in 1867.") only say whom they are about in the title."""
    if title and not text.lstrip().startswith(title):
        return f"{title}: {text}"
    return text


_NOT_WORD = re.compile(r"[\W_]+")


@lru_cache(maxsize=20_000)
def char_bigrams(text: str) -> frozenset[str]:
    """The character bigrams of `text` (NFKC, case-folded, without spaces or punctuation): the evidence that
    needs no segmentation in Chinese and Japanese."""
    plain = _NOT_WORD.sub("", unicodedata.normalize("NFKC", text).casefold())
    return frozenset(plain[i:i + 2] for i in range(len(plain) - 1))


_WORDS = re.compile(r"[^\W_]+")


@lru_cache(maxsize=20_000)
def compound_grams(text: str, n: int = 5, shortest: int = 6) -> frozenset[str]:
    """Words of `text` shorter than `shortest` whole, longer ones as their character `n`-grams (case-folded):
    the parts a compound shares with the words it is made of ("Zugspitzbahn", "Zugspitze")."""
    out: set[str] = set()
    for word in _WORDS.findall(text.casefold()):
        out.update((word,) if len(word) < shortest else (word[i:i + n] for i in range(len(word) - n + 1)))
    return frozenset(out)
