"""A dependency-free evaluator: the default, so CRAG works offline with nothing to download."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from ..text.analysis import CJK_LANGUAGES, check_language
from ..text.detection import resolve, switch_note
from ..text.measure import QuestionWords
from ..text.reading import Assessment, Reading
from ..text.sentences import READ_CHARS, sentence_spans
from ..text.words import without_format
from .base import Evaluation, RetrievalEvaluator

__all__ = ["LexicalEvaluator"]

#: How much a text loses for each piece of evidence that it does not state the answer (`Assessment`): a share
#: of the question's distinguishing terms missing (another plan, model, version, year, name: scaled by the
#: share), no answer of the asked kind anywhere (no date for "when"), the question's person not named in full
#: (a namesake), and the question's ordinary words not stated in one sentence (scaled by how much is missing:
#: weak evidence, since a passage may say it in other words). Fitted with near misses as negatives on the tune
#: halves of the judge sets and PopQA, keeping answers first (`crag-bench near-miss --fit`); figures in docs:
#: Benchmarks.
TERM_PENALTY = 0.6
FORM_PENALTY = 0.4
NAME_PENALTY = 0.2
RELATION_PENALTY = 0.0
#: Why a text scores -1: it holds none of the question's content words.
NOTHING_SHARED = "shares none of the question's words"

#: The blend of words and bigrams runs lower than word overlap alone: this monotone map (ranks unchanged) puts it
#: on the scale the other languages' thresholds (0.2, -0.5) are read on. Its points are where, on the hard sets'
#: tune halves and the sets written with the feature (Chinese and Japanese), answers are kept with the fewest
#: near misses passed on (-0.2), and where off-section passages fall (-0.6).
WORD_SCALE = ((-1.0, -1.0), (-0.6, -0.5), (-0.2, 0.2), (1.0, 1.0))


def word_scale(value: float) -> float:
    """A Chinese or Japanese score on the scale of the other languages' (see `WORD_SCALE`)."""
    for (x0, y0), (x1, y1) in itertools.pairwise(WORD_SCALE):
        if value <= x1:
            return y0 + (y1 - y0) * (max(value, x0) - x0) / (x1 - x0)
    return 1.0


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
    The combination is mapped to [-1, 1], for the whole text and for its best sentence (looked for in its
    first `READ_CHARS` characters, where the English reading reads), and the two are averaged
    (`sentence_weight`): an answer is usually stated in one sentence, and a passage that spreads
    the question's words over unrelated sentences is the typical hard negative. The weight was chosen on
    qa_pairs train, never on PopQA (figures in docs: Benchmarks). `sentence_weight=0` is the text alone.

    `language` (ISO 639-1, default "en"; "auto": the question's, detected) picks the tokens, stopwords
    and stems (see `crag_shared.text.analysis`): Chinese and Japanese are matched by character bigrams, other
    languages by stemmed words.

    Where it fails: it cannot see paraphrase or synonyms ("born" vs "birthplace"), negation, or whether
    the text actually states the answer rather than merely naming the subject; it rewards passages about
    a namesake as much as about the subject itself. Use a trained cross-encoder or T5 evaluator when
    those matter.
    """

    #: reading for the answer (English): fitted with near misses as negatives (`crag-bench near-miss --fit`)
    default_thresholds = (0.0, -0.5)
    #: word overlap alone (other languages, `reads_answer=False`): fitted on off-topic retrieval
    overlap_thresholds = (0.2, -0.5)

    def __init__(self, thresholds: tuple[float, float] | None = None, *, sentence_weight: float = 0.5,
                 language: str = "en", reads_answer: bool = True, relation_penalty: float = RELATION_PENALTY,
                 name_penalty: float = NAME_PENALTY, term_penalty: float = TERM_PENALTY,
                 form_penalty: float = FORM_PENALTY) -> None:
        if not 0.0 <= sentence_weight <= 1.0:
            raise ValueError(f"sentence_weight must lie in [0, 1], got {sentence_weight}")
        for name, value in (("relation_penalty", relation_penalty), ("name_penalty", name_penalty),
                            ("term_penalty", term_penalty), ("form_penalty", form_penalty)):
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0.0 <= value <= 2.0:
                raise ValueError(f"{name} must be a number in [0, 2], got {value!r}")
        self._thresholds = tuple(thresholds) if thresholds is not None else None
        self.sentence_weight = sentence_weight
        self.language = check_language(language)
        self.reads_answer = bool(reads_answer)
        self.relation_penalty = float(relation_penalty)
        self.name_penalty = float(name_penalty)
        self.term_penalty = float(term_penalty)
        self.form_penalty = float(form_penalty)

    @property
    def thresholds(self) -> tuple[float, float]:
        """The thresholds given, else those fitted for how this evaluator reads: `default_thresholds` when it
        reads English questions for their answer, `overlap_thresholds` when it matches words alone."""
        if self._thresholds is not None:
            return (self._thresholds[0], self._thresholds[1])
        return self.default_thresholds if self.reads_answer and self.language == "en" else self.overlap_thresholds

    def evaluate(self, query: str, texts: Sequence[str]) -> Evaluation:
        """Weighted coverage of the question's content words, whole text and best sentence averaged; in
        English, lowered for a text that does not state what the question asks (`reads_answer`)."""
        query, texts = without_format(query), [without_format(t) for t in texts]  # words split at letters only
        language = resolve(self.language, query)
        notes = [switch_note(language)] if language != self.language and self.language == "en" else []
        reads = self.reads_answer and language == "en"
        reading = Reading(query) if reads else None
        question = QuestionWords(query, language, variants=reading.variants if reading else None)
        scores = [self._score(question, text) for text in texts]
        if reading is None or not reading.checks:
            said = [NOTHING_SHARED if s == -1.0 else "" for s in scores]
            return Evaluation(scores, notes, said if any(said) else [])
        reasons = []
        for i, (score, text) in enumerate(zip(scores, texts)):
            if score == -1.0:
                reasons.append(NOTHING_SHARED)
                continue
            assessed = reading.assess(text)
            if assessed.cannot_answer:  # a question, an instruction, another person's fact: never an answer
                scores[i] = -1.0
                reasons.append(next(note for kind, note in assessed.notes if kind == "cannot") + " (-1.00)")
                continue
            parts = self.penalties(assessed, len(reading.distinguishing))
            scores[i] = max(-1.0, score - sum(parts.values()))
            reasons.append("; ".join(f"{note} ({-parts[kind]:+.2f})" for kind, note in assessed.notes if parts[kind]))
        return Evaluation(scores, reasons=reasons)

    def penalties(self, assessed: Assessment, terms: int) -> dict[str, float]:
        """What a text loses for each kind of evidence that it does not state the answer (see `TERM_PENALTY`):
        each weighs by its own setting, none is a veto, and the trace names each one that costs anything."""
        return {"term": self.term_penalty * len(assessed.missing) / max(1, terms),
                "form": self.form_penalty * (not assessed.has_form),
                "name": self.name_penalty * (not assessed.full_name),
                "relation": self.relation_penalty * (1.0 - assessed.support)}

    def _score(self, question: QuestionWords, text: str) -> float:
        whole = question.score(text)
        if not self.sentence_weight or whole == -1.0:  # no question word anywhere: no sentence has one
            return word_scale(whole) if question.language in CJK_LANGUAGES else whole
        read = text[:READ_CHARS]  # the best sentence is looked for where the reading reads
        spans = sentence_spans(question.language, read)  # cached: the refiner splits the same passages
        best = max(question.part_scores(read, spans), default=whole) if len(spans) > 1 else whole
        blended = (1.0 - self.sentence_weight) * whole + self.sentence_weight * best
        return word_scale(blended) if question.language in CJK_LANGUAGES else blended
