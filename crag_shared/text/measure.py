"""The lexical measure: how completely and how closely a text covers a question's weighted words.

A question word weighs `log(LENGTH_OFFSET + its length)` (a long word says more than a short one), times
`CAPITAL_WEIGHT` for a capitalised word (a name), `NUMBER_WEIGHT` for a number and `NAME_HEAD_WEIGHT` for the
last word of a multi-word name (English names are head-final: the surname or head noun identifies, the given
name or modifier is shared by many namesakes); outside English and Chinese and Japanese, a stopword keeps
`STOP_WEIGHT` of its weight instead of none. A text is then read for three parts:

- coverage: the share of the question's weight whose words the text holds (`COVERAGE_WEIGHT`);
- phrase: the share of the question's adjacent word pairs that stand adjacent in the text (`PHRASE_WEIGHT`);
- focus: how early the first of them stands, `1 / (1 + position / FOCUS_DECAY)` (`FOCUS_WEIGHT`): a passage
  *about* something names it first.

Their weighted sum over `PARTS_TOTAL` (1 for a text that holds every word, every pair and starts with one) is
mapped to [-1, 1]; a text without any question word scores -1. In Chinese, Japanese and German the score is
blended with the share of the question's character n-grams the text holds (`GRAMS`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence

from ..scores import clip
from .analysis import CJK_LANGUAGES, analyzer
from .sentences import READ_CHARS
from .words import char_bigrams, compound_grams

__all__ = ["QuestionWords"]

#: A question word weighs log(LENGTH_OFFSET + its length): never zero, and growing slowly with length.
LENGTH_OFFSET = 2
#: A capitalised question word (a name; a stopword never is one) weighs this many times more.
CAPITAL_WEIGHT = 1.6
#: A number ("1867") weighs this many times more: a year or a count pins a fact down.
NUMBER_WEIGHT = 1.3
#: The last word of a capitalised run ("Harrison" in "Charles Harrison") weighs this many times more.
NAME_HEAD_WEIGHT = 1.8
#: Word languages other than English: a question's stopword keeps this share of its weight instead of none. The
#: stopwords-iso lists hold words questions turn on ("hoch", "lang", "Jahr", "erste" in German); dropping them
#: made German analysis worse than none on near-miss sets. Chosen on the tune halves (`crag-bench accuracy
#: --languages`): 0.75 and 1.0 tie there; 0.75 still discounts the function words.
STOP_WEIGHT = 0.75
#: How much each part of a text's reading counts: the share of the question's weight it covers, the share of
#: the question's word pairs it holds as pairs, and how early it names the first question word.
COVERAGE_WEIGHT = 0.7
PHRASE_WEIGHT = 0.15
FOCUS_WEIGHT = 0.2
#: The parts' weights together: a text that scores 1 on every part scores 1 in all.
PARTS_TOTAL = COVERAGE_WEIGHT + PHRASE_WEIGHT + FOCUS_WEIGHT
#: Focus halves when the first question word stands this many words into the text.
FOCUS_DECAY = 5.0
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

    def __init__(self, query: str, language: str = "en",
                 variants: Callable[[Iterable[str]], dict[str, str]] | None = None) -> None:
        self.language = language
        self.analyzer = analyzer(language)
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
        self.weights = _weights(content, capital, stop)
        self.pairs = {(a, b) for a, b in itertools.pairwise(content) if a and b}
        self.total = sum(self.weights.values())
        #: `variants` (e.g. stems) gives, for a set of words, the variant of each word it changes: a lower-case
        #: question word also matches a text word of the same variant ("invented" matches "inventing"); names
        #: match as written
        self._variant_of = variants
        lower = [term for term, up in zip(content, capital) if term and not up]
        changed = variants(set(lower)) if variants else {}
        self._variants = {changed.get(term, term): term for term in lower} if variants else {}
        grams: tuple[Callable[[str], frozenset[str]] | None, float] = GRAMS.get(language, (None, 0.0))
        self._grams, self._gram_weight = grams
        self.grams = self._grams(query) if self._grams else frozenset()

    def score(self, text: str) -> float:
        """One text's score in [-1, 1] against these question words (in Chinese, Japanese and German, blended
        with the share of the question's character n-grams the text holds: `GRAMS`), read in its first
        `READ_CHARS` characters: a 4 MB page costs what 100 KB does (segmenting and stemming whole megabytes of
        Chinese or German took seconds per passage)."""
        text = text[:READ_CHARS]
        return self._blend(self._words(self.analyzer.terms(text)), text)

    def part_scores(self, text: str, spans: Sequence[tuple[int, int]]) -> list[float]:
        """`score` of each span of `text` (its sentences), with the variants of their words found once for all."""
        parts = [self.analyzer.terms(text[a:b]) for a, b in spans]
        known = self._variants_in(set().union(*parts)) if self._variants else None
        return [self._blend(self._words(tokens, known), text[a:b]) for tokens, (a, b) in zip(parts, spans)]

    def _blend(self, words: float, text: str) -> float:
        if not self.grams or self._grams is None:
            return words
        grams = 2.0 * len(self.grams & self._grams(text)) / len(self.grams) - 1.0
        return (1.0 - self._gram_weight) * words + self._gram_weight * grams

    def _variants_in(self, words: set[str]) -> tuple[dict[str, str], set[str]]:
        """The variant of each of `words` that differs from it, and the question words' variants among the variants
        of all of `words` (the only ones that any part of a text of these words can hold)."""
        changed = self._variant_of(words) if self._variant_of is not None else {}
        held = set(changed.values()) | ((self._variants.keys() & words) - changed.keys())
        return changed, self._variants.keys() & held

    def _words(self, tokens: list[str], known: tuple[dict[str, str], set[str]] | None = None) -> float:
        """The word part of a score, from a text's terms; `known`: `_variants_in` of (at least) these words, when
        already found."""
        if not self.total:
            return -1.0
        found = self.weights.keys() & tokens  # set operations run in C: a 4 MB passage has 750,000 tokens
        if self._variants and len(found) < len(self.weights):
            changed, reachable = self._variants_in(set(tokens)) if known is None else known
            missing = {key: term for key, term in self._variants.items() if term not in found and key in reachable}
            if missing:  # set and dict operations in C; only the words with a variant are looked at one by one
                present = changed.keys() & tokens
                held = {changed[word] for word in present} | (missing.keys() & tokens) - changed.keys()
                by_variant = {term for key, term in missing.items() if key in held}
                if by_variant:
                    found |= by_variant
                    # each text word a question word's variant names (and the question does not) becomes that word
                    renamed = {word: self._variants[word] for word in
                               (self._variants.keys() & tokens) - changed.keys() - self.weights.keys()}
                    renamed.update((word, self._variants[changed[word]]) for word in present
                                   if changed[word] in self._variants and word not in self.weights)
                    tokens = list(map(renamed.get, tokens, tokens))
        if not found:
            return -1.0
        coverage = sum(weight for term, weight in self.weights.items() if term in found) / self.total
        phrase = len(self.pairs.intersection(itertools.pairwise(tokens))) / len(self.pairs) if self.pairs else 1.0
        first = next(i for i, term in enumerate(tokens) if term in found)
        focus = 1.0 / (1.0 + first / FOCUS_DECAY)
        combined = COVERAGE_WEIGHT * coverage + PHRASE_WEIGHT * phrase + FOCUS_WEIGHT * focus
        return clip(2.0 * combined / PARTS_TOTAL - 1.0)


def _weights(content: list[str | None], capital: list[bool], stop: list[bool]) -> dict[str, float]:
    """Each question term's weight (see the module docstring); a term met twice keeps its larger weight."""
    weights: dict[str, float] = {}
    for i, kept in enumerate(content):
        if kept is None:
            continue
        weight = (math.log(LENGTH_OFFSET + len(kept)) * (CAPITAL_WEIGHT if capital[i] else 1.0)
                  * (STOP_WEIGHT if stop[i] else 1.0))
        if kept.isdigit():
            weight *= NUMBER_WEIGHT
        if capital[i] and i and capital[i - 1] and not (i + 1 < len(capital) and capital[i + 1]):
            weight *= NAME_HEAD_WEIGHT
        weights[kept] = max(weight, weights.get(kept, 0.0))
    return weights
