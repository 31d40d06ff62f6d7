"""Languages for the lexical path: tokens, stopwords and stems per language, and language detection.

- English ("en", the default) is the analysis crag has always used: words, a light English fold and an
  English stopword list, so English figures do not move.
- Chinese and Japanese need no dictionary: Han runs become overlapping character bigrams (Lucene's CJK
  analyzer), split first where a stopword stands; katakana runs are one token; hiragana runs (particles,
  endings) are stop tokens. With `jieba` installed, Chinese Han runs are segmented (search mode: words
  and their parts) instead.
- Other languages: words, lower-cased and without accents, stemmed by Snowball where it has the language.
- Stopwords come from the stopwords-iso collection (`stopwordsiso`), stems from `snowballstemmer`.
- "auto" detects the language of a text: kana means Japanese, Han without kana Chinese, anything else
  goes to py3langid (restricted to the languages with a stopword list), falling back to English.
"""

from __future__ import annotations

import importlib.util
import itertools
import logging
import math
import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import cast

from .scripts import CJK, HAN, HIRAGANA, KATAKANA, foreign_script, script_language
from .sentences import SPLITTER_LANGUAGES
from .text import STOPWORDS, char_bigrams, compound_grams, fold, words

TOKENS = re.compile(rf"(?P<han>[{HAN}]+)|(?P<kata>[{KATAKANA}]+)|(?P<hira>[{HIRAGANA}]+)"
                     rf"|(?P<word>[^\W{CJK}]+(?:['’][^\W{CJK}]+)*)")
CJK_LANGUAGES = frozenset({"zh", "ja"})
SNOWBALL = {"ar": "arabic", "ca": "catalan", "cs": "czech", "da": "danish", "de": "german", "el": "greek",
            "es": "spanish", "eu": "basque", "fa": "persian", "fi": "finnish", "fr": "french", "ga": "irish",
            "hi": "hindi", "hu": "hungarian", "hy": "armenian", "id": "indonesian", "it": "italian",
            "lt": "lithuanian", "nl": "dutch", "no": "norwegian", "pl": "polish", "pt": "portuguese",
            "ro": "romanian", "ru": "russian", "sv": "swedish", "tr": "turkish"}


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
        for word in (w for w in self.stopwords if _is_cjk(w)):
            self._stop_lengths[word[0]] = tuple(sorted({*self._stop_lengths.get(word[0], ()), len(word)},
                                                      reverse=True))
        self._jieba = segmenter and code == "zh" and importlib.util.find_spec("jieba") is not None

    def __repr__(self) -> str:
        return f"Analyzer({self.code!r})"

    @property
    def segmented(self) -> bool:
        """Whether Chinese Han runs are cut into words by jieba (installed, and not `segmenter=False`)."""
        return self._jieba

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
            else:
                out += self._han(piece)
        return out

    def _han(self, run: str) -> tuple[Token, ...]:
        """A Han run's tokens (cached for the shared analyzers: a passage's sentences repeat its runs)."""
        return _han_tokens(self.code, run) if self is analyzer(self.code) else tuple(self.han_tokens(run))

    def han_tokens(self, run: str) -> Iterator[Token]:
        """A Han run: stopwords cut it; each piece is segmented (jieba) or split into bigrams."""
        for piece, stop in self.cut(run):
            if stop:
                yield Token(piece, piece, True)
            elif self._jieba:
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


_NAME_HEAD = 1.8  # weight factor of the last word of a capitalised run ("Harrison" in "Charles Harrison")
#: Word languages other than English: a question's stopword keeps this share of its weight instead of none. The
#: stopwords-iso lists hold words questions turn on ("hoch", "lang", "Jahr", "erste" in German); dropping them
#: made German analysis worse than none on near-miss sets. Chosen on the tune halves (`crag-bench accuracy
#: --languages`): 0.75 and 1.0 tie there; 0.75 still discounts the function words.
STOP_WEIGHT = 0.75
#: The share of a score that comes from character n-grams of the question found in the text, per language, and
#: how they are cut. Chinese and Japanese: bigrams of every character (kana, Han and Latin alike), which see
#: compounds and okurigana that a segmentation cuts differently on each side. German: 5-grams of long words,
#: which see a compound's parts ("Zugspitzbahn", "Zugspitze"). Chosen on the tune halves.
GRAMS: dict[str, tuple[Callable[[str], frozenset[str]], float]] = {
    "zh": (char_bigrams, 0.7), "ja": (char_bigrams, 0.7), "de": (compound_grams, 0.4)}


class QuestionWords:
    """The query's weighted content words in `language` (a code, not "auto"), analysed once so that scoring
    many texts against it is cheap.
    `score(text)` in [-1, 1] is LexicalEvaluator's measure for one text; the embedding evaluator's
    "matched" unit uses it to pick the sentences worth embedding, and the in-memory web ranks pages by it."""

    def __init__(self, query: str, language: str = "en", variant: Callable[[str], str] | None = None) -> None:
        self.language = language
        self.analyzer = analyzer(language)
        self.weights: dict[str, float] = {}
        content: list[str | None] = []
        capital: list[bool] = []
        stop: list[bool] = []
        weighs_stopwords = language != "en" and language not in CJK_LANGUAGES
        for token in self.analyzer.tokens(query):
            if (token.stop and not weighs_stopwords) or not token.term:
                content.append(None)
                capital.append(False)
                stop.append(False)
                continue
            capital.append(token.surface[:1].isupper() and not token.stop)  # a stopword is never a name
            content.append(token.term)
            stop.append(token.stop)
        for i, kept in enumerate(content):
            if kept is None:
                continue
            weight = math.log(2 + len(kept)) * (1.6 if capital[i] else 1.0) * (STOP_WEIGHT if stop[i] else 1.0)
            if kept.isdigit():
                weight *= 1.3
            if capital[i] and i and capital[i - 1] and not (i + 1 < len(capital) and capital[i + 1]):
                weight *= _NAME_HEAD
            self.weights[kept] = max(weight, self.weights.get(kept, 0.0))
        self.pairs = {(a, b) for a, b in itertools.pairwise(content) if a and b}
        self.total = sum(self.weights.values())
        #: `variant` (e.g. a stem): a lower-case question word also matches a text word of the same variant
        #: ("invented" matches "inventing"); names match as written
        self._variant = variant
        self._variants = {variant(term): term for term, up in zip(content, capital) if term and not up} \
            if variant else {}
        grams: tuple[Callable[[str], frozenset[str]] | None, float] = GRAMS.get(language, (None, 0.0))
        self._grams, self._gram_weight = grams
        self.grams = self._grams(query) if self._grams else frozenset()

    def score(self, text: str) -> float:
        """One text's score in [-1, 1] against these question words (in Chinese, Japanese and German, blended
        with the share of the question's character n-grams the text holds: `GRAMS`)."""
        words = self._words(text)
        if not self.grams or self._grams is None:
            return words
        grams = 2.0 * len(self.grams & self._grams(text)) / len(self.grams) - 1.0
        return (1.0 - self._gram_weight) * words + self._gram_weight * grams

    def _words(self, text: str) -> float:
        if not self.total:
            return -1.0
        tokens = self.analyzer.terms(text)
        found = self.weights.keys() & tokens  # set operations run in C: a 4 MB passage has 750,000 tokens
        if self._variants and len(found) < len(self.weights):
            variant = cast(Callable[[str], str], self._variant)
            keys = set(map(variant, set(tokens)))
            by_variant = {term for key, term in self._variants.items() if key in keys and term not in found}
            if by_variant:
                found |= by_variant
                tokens = [term if term in self.weights else self._variants.get(variant(term), term) for term in tokens]
        if not found:
            return -1.0
        coverage = sum(weight for term, weight in self.weights.items() if term in found) / self.total
        phrase = len(self.pairs.intersection(itertools.pairwise(tokens))) / len(self.pairs) if self.pairs else 1.0
        first = next(i for i, term in enumerate(tokens) if term in found)
        focus = 1.0 / (1.0 + first / 5.0)
        combined = 0.7 * coverage + 0.15 * phrase + 0.2 * focus
        return max(-1.0, min(1.0, 2.0 * combined / 1.05 - 1.0))


def clear_text_caches(*, words_too: bool = False) -> None:
    """Forget the cached analyses of texts (sentences, Chinese and Japanese runs), and with `words_too`
    of single words (terms, stems) as well: for timings of texts never seen before."""
    from .sentences import sentence_spans

    for cached in (sentence_spans, _han_tokens, char_bigrams, compound_grams,
                   *((_term, _plain, fold) if words_too else ())):
        cached.cache_clear()


@lru_cache(maxsize=16)
def analyzer(code: str) -> Analyzer:
    """The analyzer of a language code (not "auto": see `resolve`)."""
    return Analyzer(check_language(code))


def resolve(code: str, text: str) -> str:
    """The language to analyze `text` in: `code` itself; for "auto" the language detected in `text`; and for
    the default "en", a text written in Chinese or Japanese script is analyzed as what its script says
    ("zh", "ja": English word analysis finds nothing in it), with a warning once per language."""
    if code == "auto":
        return detect_language(text)
    if code == "en":
        script = script_language(text)
        if script is not None:
            _tell(script, switch_note(script))
            return script
        if foreign_script(text):
            _tell("foreign", FOREIGN_NOTE)
    return code


def detect_language(text: str) -> str:
    """The language `text` is written in (ISO 639-1); English when it cannot tell."""
    script = script_language(text)
    if script is not None:
        return script
    if sum(1 for c in text if c.isalpha()) < 3:
        return "en"
    code, _ = _identifier().classify(text)  # type: ignore[attr-defined]
    return str(code)


#: A note for the trace when the default "en" meets Chinese or Japanese script (a question, or a passage the
#: refiner splits into sentences).
SWITCH_NOTE = "language 'en' met text in {name} script: analyzed as {code!r} (set language={code!r} or 'auto')"
_SCRIPT_NAMES = {"zh": "Chinese", "ja": "Japanese"}
_TOLD: set[str] = set()


def switch_note(code: str) -> str:
    """The trace note of a switch from "en" to `code`."""
    return SWITCH_NOTE.format(name=_SCRIPT_NAMES[code], code=code)


#: The warning when the default "en" meets a question in another script than Latin, Chinese or Japanese.
FOREIGN_NOTE = ("language 'en' met text not in Latin script: analyzed as English, so its words match only as "
                "written, without stems or stopwords (set language= its code, or 'auto')")


def _tell(key: str, note: str) -> None:
    """Warn once per process and kind: the default met text it was not set for."""
    if key not in _TOLD:
        _TOLD.add(key)
        from .trace import log

        log(logging.WARNING, "{note}; this is said once", note=note)


@lru_cache(maxsize=1)
def _identifier() -> object:
    """py3langid, restricted to the non-CJK languages crag has stopwords for."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE)
    known = set(identifier.labels)
    identifier.set_languages([c for c in supported_languages() if c in known and c not in CJK_LANGUAGES])
    return identifier


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


@lru_cache(maxsize=50_000)
def _han_tokens(code: str, run: str) -> tuple[Token, ...]:
    return tuple(analyzer(code).han_tokens(run))


_CJK_ONLY = re.compile(f"[{CJK}]+")


def _is_cjk(word: str) -> bool:
    return bool(_CJK_ONLY.fullmatch(word))


def _jieba_words(piece: str) -> list[str]:
    import jieba

    return [w for w in jieba.lcut_for_search(piece) if w.strip()]
