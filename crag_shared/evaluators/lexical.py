"""A dependency-free evaluator: the default, so CRAG works offline with nothing to download."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from ..language import analyzer, check_language, resolve
from ..sentences import sentence_spans
from .base import Evaluation, RetrievalEvaluator


class LexicalEvaluator(RetrievalEvaluator):
    """Scores how completely and how closely a text covers the question's content words.

    What it measures, per (query, text) pair and independent of any other text:
    - coverage: the share of the question's content words found in the text, each weighted by an
      information proxy (longer and capitalised words, i.e. names, weigh more than short common ones;
      the last word of a multi-word name weighs most, because English names are head-final: the surname
      or head noun identifies, the given name or modifier is shared by many namesakes);
    - phrase match: the share of adjacent content-word pairs of the question (e.g. a person's first and
      last name) that stand adjacent in the text;
    - focus: whether the matches start early in the text, the way a passage *about* something names it
      first.
    The combination is mapped to [-1, 1], for the whole text and for its best sentence, and the two are
    averaged (`sentence_weight`): an answer is usually stated in one sentence, and a passage that spreads
    the question's words over unrelated sentences is the typical hard negative. The weight was chosen on
    qa_pairs train, never on PopQA (figures in docs: Benchmarks). `sentence_weight=0` is the text alone.

    `language` (ISO 639-1, default "en"; "auto": the question's, detected) picks the tokens, stopwords
    and stems (see `crag_shared.language`): Chinese and Japanese are matched by character bigrams, other
    languages by stemmed words.

    Where it fails: it cannot see paraphrase or synonyms ("born" vs "birthplace"), negation, or whether
    the text actually states the answer rather than merely naming the subject; it rewards passages about
    a namesake as much as about the subject itself. Use a trained cross-encoder or T5 evaluator when
    those matter.
    """

    default_thresholds = (0.2, -0.5)

    def __init__(self, thresholds: tuple[float, float] | None = None, *, sentence_weight: float = 0.5,
                 language: str = "en") -> None:
        if not 0.0 <= sentence_weight <= 1.0:
            raise ValueError(f"sentence_weight must lie in [0, 1], got {sentence_weight}")
        self._thresholds = tuple(thresholds) if thresholds is not None else None
        self.sentence_weight = sentence_weight
        self.language = check_language(language)

    def evaluate(self, query: str, texts: Sequence[str]) -> Evaluation:
        """Weighted coverage of the question's content words, whole text and best sentence averaged."""
        question = QuestionWords(query, resolve(self.language, query))
        return Evaluation([self._score(question, text) for text in texts])

    def _score(self, question: QuestionWords, text: str) -> float:
        whole = question.score(text)
        if not self.sentence_weight or whole == -1.0:  # no question word anywhere: no sentence has one
            return whole
        spans = sentence_spans(question.language, text)  # cached: the refiner splits the same passages
        best = max((question.score(text[a:b]) for a, b in spans), default=whole) if len(spans) > 1 else whole
        return (1.0 - self.sentence_weight) * whole + self.sentence_weight * best


_NAME_HEAD = 1.8  # weight factor of the last word of a capitalised run ("Harrison" in "Charles Harrison")


class QuestionWords:
    """The query's weighted content words in `language` (a code, not "auto"), analysed once so that scoring
    many texts against it is cheap.
    `score(text)` in [-1, 1] is LexicalEvaluator's measure for one text; the embedding evaluator's
    "matched" unit uses it to pick the sentences worth embedding."""

    def __init__(self, query: str, language: str = "en") -> None:
        self.language = language
        self.analyzer = analyzer(language)
        self.weights: dict[str, float] = {}
        content: list[str | None] = []
        capital: list[bool] = []
        for token in self.analyzer.tokens(query):
            if token.stop or not token.term:
                content.append(None)
                capital.append(False)
                continue
            capital.append(token.surface[:1].isupper())
            content.append(token.term)
        for i, kept in enumerate(content):
            if kept is None:
                continue
            weight = math.log(2 + len(kept)) * (1.6 if capital[i] else 1.0)
            if kept.isdigit():
                weight *= 1.3
            if capital[i] and i and capital[i - 1] and not (i + 1 < len(capital) and capital[i + 1]):
                weight *= _NAME_HEAD
            self.weights[kept] = max(weight, self.weights.get(kept, 0.0))
        self.pairs = {(a, b) for a, b in itertools.pairwise(content) if a and b}
        self.total = sum(self.weights.values())

    def score(self, text: str) -> float:
        """One text's score in [-1, 1] against these question words."""
        if not self.total:
            return -1.0
        tokens = self.analyzer.terms(text)
        found = self.weights.keys() & tokens  # set operations run in C: a 4 MB passage has 750,000 tokens
        if not found:
            return -1.0
        coverage = sum(weight for term, weight in self.weights.items() if term in found) / self.total
        phrase = len(self.pairs.intersection(itertools.pairwise(tokens))) / len(self.pairs) if self.pairs else 1.0
        first = next(i for i, term in enumerate(tokens) if term in found)
        focus = 1.0 / (1.0 + first / 5.0)
        combined = 0.7 * coverage + 0.15 * phrase + 0.2 * focus
        return max(-1.0, min(1.0, 2.0 * combined / 1.05 - 1.0))
