"""Per-language analysis for the lexical path: how a language's texts become tokens, with its stopwords and stems.

- English ("en", the default) is the analysis crag has always used: words, a light English fold and an
  English stopword list (`tables/en/stopwords.txt`), so English figures do not move.
- Chinese and Japanese need no dictionary: Han runs become overlapping character bigrams (Lucene's CJK
  analyzer), split first where a stopword stands; katakana runs are one token; hiragana runs (particles,
  endings) are stop tokens. With `jieba` installed, Chinese Han runs are segmented (search mode: words
  and their parts) instead.
- Other languages: words, lower-cased and without accents, stemmed by Snowball where it has the language
  (`tables/mul/snowball_stemmers.txt`).
- Stopwords come from the stopwords-iso collection (`stopwordsiso`), stems from `snowballstemmer`.

Which language a text is analyzed in ("auto", a script that overrides the default) is `detection.py`'s.
"""

from __future__ import annotations

import importlib.util
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from .caching import text_cache
from .knowledge import table_keys
from .sentences import READ_CHARS, SPLITTER_LANGUAGES, sentence_spans
from .words import STOPWORDS, char_bigrams, compound_grams, fold, words
from .writing_systems import CJK, HAN, HIRAGANA, KATAKANA

__all__ = [
    "CJK_LANGUAGES", "TOKENS", "Analyzer", "Token", "analyzer", "check_language", "clear_text_caches",
    "supported_languages",
]

TOKENS = re.compile(rf"(?P<han>[{HAN}]+)|(?P<kata>[{KATAKANA}]+)|(?P<hira>[{HIRAGANA}]+)"
                     rf"|(?P<word>[^\W{CJK}]+(?:['’][^\W{CJK}]+)*)")
CJK_LANGUAGES = frozenset({"zh", "ja"})
#: The Snowball stemmer of each language that has one (`tables/mul/snowball_stemmers.txt`).
SNOWBALL = dict(table_keys("mul", "snowball_stemmers"))


@dataclass(frozen=True)
class Token:
    """One unit of a text: its surface form, the term it is matched by, and whether it is a stop token."""

    surface: str
    term: str
    stop: bool


def check_language(code: object) -> str:
    """`code` if it is "auto" or a language crag can analyze (an ISO 639-1 code), else ValueError; "auto" also
    needs the language identifier (the `detect` extra), or it raises ImportError saying how to install it."""
    if code == "auto":
        if importlib.util.find_spec("py3langid") is None:
            raise ImportError("language='auto' detects each question's language with py3langid: "
                              "pip install 'crag-shared[detect]' (or name the language, e.g. language='de')")
        return code
    if isinstance(code, str) and code in supported_languages():
        return code
    raise ValueError(f"language must be 'auto' or an ISO 639-1 code crag supports ({', '.join(supported_languages())})"
                     f", got {code!r}")


@lru_cache(maxsize=1)
def supported_languages() -> tuple[str, ...]:
    """Every language with a stopword list or sentence rules (and English)."""
    import stopwordsiso

    return tuple(sorted(set(stopwordsiso.langs()) | SPLITTER_LANGUAGES | {"en"}))


class Analyzer:
    """How one language's texts become tokens; `tokens(text)` in order, stop tokens included (positions
    matter for phrase matching). `segmenter=False` keeps Chinese in bigrams even with jieba installed."""

    def __init__(self, code: str, *, segmenter: bool = True) -> None:
        self.code = code
        self.stopwords = STOPWORDS if code == "en" else _stopwords(code)
        self._stem = _stemmer(code)
        self._stop_lengths: dict[str, tuple[int, ...]] = {}  # first character -> stopword lengths, longest first
        for word in (w for w in self.stopwords if _CJK_ONLY.fullmatch(w)):
            self._stop_lengths[word[0]] = tuple(sorted({*self._stop_lengths.get(word[0], ()), len(word)},
                                                      reverse=True))
        #: Whether Chinese Han runs are cut into words by jieba (installed, and not `segmenter=False`).
        self.segmented = segmenter and code == "zh" and importlib.util.find_spec("jieba") is not None

    def __repr__(self) -> str:
        return f"Analyzer({self.code!r})"

    def term(self, word: str) -> str:
        """A word's matching form: English's fold, elsewhere lower case without accents, stemmed."""
        if self.code == "en":
            return fold(word)
        return _term(self.code, word)

    def terms(self, text: str) -> list[str]:
        """The matching terms of `text`, stop terms included, in order."""
        if self.code == "en":
            return list(map(fold, words(text)))
        return [t.term for t in self.tokens(text)]

    def tokens(self, text: str) -> list[Token]:
        """The tokens of `text`."""
        if self.code == "en":  # exactly the English analysis crag has always used
            return [Token(w, term, term in self.stopwords or w.lower() in self.stopwords)
                    for w in words(text) for term in (fold(w),)]
        out: list[Token] = []
        for match in TOKENS.finditer(text):
            kind, piece = match.lastgroup, match.group()
            if kind == "word":
                term = self.term(piece)
                out.append(Token(piece, term, term in self.stopwords or _plain(piece) in self.stopwords))
            elif kind == "hira":
                out.append(Token(piece, piece, True))
            elif kind == "kata":
                out.append(Token(piece, piece, piece in self.stopwords))
            else:  # cached only where the text is read again sentence by sentence, its first READ_CHARS
                out += self._han(piece) if match.start() < READ_CHARS else self.han_tokens(piece)
        return out

    def _han(self, run: str) -> tuple[Token, ...]:
        """A Han run's tokens (cached for the shared analyzers: a passage's sentences repeat its runs)."""
        return _han_tokens(self.code, run) if self is analyzer(self.code) else tuple(self.han_tokens(run))

    def han_tokens(self, run: str) -> Iterator[Token]:
        """A Han run: stopwords cut it; each piece is segmented (jieba) or split into bigrams."""
        for piece, stop in self.cut(run):
            if stop:
                yield Token(piece, piece, True)
            elif self.segmented:
                yield from (Token(w, w, w in self.stopwords) for w in _jieba_words(piece))
            elif len(piece) == 1:
                yield Token(piece, piece, False)
            else:
                yield from (Token(piece[i:i + 2], piece[i:i + 2], False) for i in range(len(piece) - 1))

    def cut(self, run: str) -> Iterator[tuple[str, bool]]:
        """(piece, is a stopword) along `run`, stopwords matched longest first."""
        start = i = 0
        while i < len(run):
            lengths = self._stop_lengths.get(run[i])
            found = next((n for n in lengths if run[i:i + n] in self.stopwords), 0) if lengths else 0
            if found:
                if start < i:
                    yield run[start:i], False
                yield run[i:i + found], True
                i = start = i + found
            else:
                i += 1
        if start < len(run):
            yield run[start:], False


@lru_cache(maxsize=16)
def analyzer(code: str) -> Analyzer:
    """The analyzer of a language code (not "auto": see `detection.resolve`)."""
    return Analyzer(check_language(code))


def clear_text_caches(*, words_too: bool = False) -> None:
    """Forget the cached analyses of texts (sentences, Chinese and Japanese runs), and with `words_too`
    of single words (terms, stems) as well: for timings of texts never seen before."""
    for cached in (sentence_spans, _han_tokens, char_bigrams, compound_grams,
                   *((_term, _plain, fold) if words_too else ())):
        cached.cache_clear()


@lru_cache(maxsize=64)
def _stopwords(code: str) -> frozenset[str]:
    import stopwordsiso

    listed = stopwordsiso.stopwords(code) if stopwordsiso.has_lang(code) else set()
    return frozenset(_plain(w) for w in listed) | frozenset(listed)


def _stemmer(code: str) -> object | None:
    if code not in SNOWBALL:
        return None
    import snowballstemmer

    return snowballstemmer.stemmer(SNOWBALL[code])


@lru_cache(maxsize=200_000)
def _plain(word: str) -> str:
    """Lower case without accents."""
    if word.isascii():
        return word.lower()
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


@lru_cache(maxsize=200_000)
def _term(code: str, word: str) -> str:
    """A word's term in a language other than English (cached: the stemmer is pure Python)."""
    stemmer = analyzer(code)._stem
    plain = _plain(word)
    return stemmer.stemWord(plain) if stemmer is not None else plain  # type: ignore[attr-defined]


#: The tokens kept for Han runs seen again (a passage's sentences repeat the runs of its first `READ_CHARS`, which
#: its whole-text reading has just segmented), by the characters of the runs: segmented, a run's tokens take up to
#: about 470 bytes a character, so at most about 50 MB; a run longer than a tenth of it (a page without
#: punctuation) is segmented and not kept.
HAN_KEPT_CHARS = READ_CHARS


@text_cache(max_chars=HAN_KEPT_CHARS, entry_chars=HAN_KEPT_CHARS // 10, max_entries=50_000)
def _han_tokens(code: str, run: str) -> tuple[Token, ...]:
    return tuple(analyzer(code).han_tokens(run))


_CJK_ONLY = re.compile(f"[{CJK}]+")



def _jieba_words(piece: str) -> list[str]:
    import jieba

    return [w for w in jieba.lcut_for_search(piece) if w.strip()]
