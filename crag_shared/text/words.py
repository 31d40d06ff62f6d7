"""Words and folding: the tokens, the light English fold and the character grams every analysis starts from."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from .caching import text_cache
from .knowledge import word_set

__all__ = [
    "STOPWORDS", "char_bigrams", "compound_grams", "content_terms", "encodable", "fold", "terms", "titled",
    "without_format", "word_count", "words",
]

WORD_RE = re.compile(r"\w+(?:['’]\w+)*", re.UNICODE)
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


#: Invisible format characters (Unicode Cf) that PDF and HTML extraction leave inside words: the soft hyphen,
#: zero-width spaces and joiners, direction marks, the byte-order mark.
_FORMAT = re.compile("[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff"
                     "\ufff9-\ufffb]")


def without_format(text: str) -> str:
    """`text` without invisible format characters, so "Middle\u00admarch" reads as the word "Middlemarch"."""
    return text if text.isascii() else _FORMAT.sub("", text)


def encodable(text: str) -> str:
    """`text` with every lone surrogate (what a broken decoder leaves) as U+FFFD: a tokenizer, UTF-8 and JSON can
    take it, where one such character made a tokenizer raise for the whole batch."""
    return _LONE_SURROGATE.sub("\ufffd", text) if not text.isascii() else text

#: English stopwords (`tables/en/stopwords.txt`): function words and question words say nothing about which
#: passage answers a question.
STOPWORDS = word_set("en", "stopwords")


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
#: The n-gram sets kept for texts seen again, by the characters of text they were computed from (a text's set
#: takes about 120 bytes a character for bigrams of Han text, 60 for 5-grams of German): at most about 30 MB
#: each; a longer text is computed and not kept.
BIGRAMS_KEPT_CHARS, GRAMS_KEPT_CHARS = 250_000, 500_000


@text_cache(max_chars=BIGRAMS_KEPT_CHARS, entry_chars=BIGRAMS_KEPT_CHARS // 10, max_entries=20_000)
def char_bigrams(text: str) -> frozenset[str]:
    """The character bigrams of `text` (NFKC, case-folded, without spaces or punctuation): the evidence that
    needs no segmentation in Chinese and Japanese."""
    plain = _NOT_WORD.sub("", unicodedata.normalize("NFKC", text).casefold())
    return frozenset(plain[i:i + 2] for i in range(len(plain) - 1))


_WORDS = re.compile(r"[^\W_]+")


@text_cache(max_chars=GRAMS_KEPT_CHARS, entry_chars=GRAMS_KEPT_CHARS // 10, max_entries=20_000)
def compound_grams(text: str, n: int = 5, shortest: int = 6) -> frozenset[str]:
    """Words of `text` shorter than `shortest` whole, longer ones as their character `n`-grams (case-folded):
    the parts a compound shares with the words it is made of ("Zugspitzbahn", "Zugspitze")."""
    out: set[str] = set()
    for word in _WORDS.findall(text.casefold()):
        out.update((word,) if len(word) < shortest else (word[i:i + n] for i in range(len(word) - n + 1)))
    return frozenset(out)
