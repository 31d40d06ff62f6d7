"""A dependency-free evaluator: the default, so CRAG works offline with nothing to download."""

from __future__ import annotations

from collections.abc import Sequence

from ..language import QuestionWords, check_language, resolve
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
