"""Every text path is linear or bounded: each hostile input of the fourth probe, held at a size that runs well under
a second, with its complexity asserted by counting work (or, where nothing can be counted, by the ratio of two
sizes measured in one run, with a generous margin), never by absolute time."""

from __future__ import annotations

import gc
import time

import pytest

from crag_shared import Corrector, LexicalEvaluator
from crag_shared.evaluators.base import Evaluation, RetrievalEvaluator
from crag_shared.text.analysis import _han_tokens
from crag_shared.text.names import name_runs
from crag_shared.text.reading import Reading
from crag_shared.text.sentences import READ_CHARS, sentence_spans
from crag_shared.text.words import char_bigrams, compound_grams, fold


def _calls(cached) -> int:
    info = cached.cache_info()
    return info.hits + info.misses


# -- the reading's full-name check ----------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "runs"), [
    ("Ludwig van Beethoven was born in Bonn.", [["Ludwig", "van", "Beethoven"]]),
    ('Dwayne "The Rock" Johnson and J. R. R. Tolkien', [["Dwayne", "The", "Rock", "Johnson"],
                                                       ["J", "R", "R", "Tolkien"]]),
    ("John Finlay (April 22, 1837) met A.B. Smith.", [["John", "Finlay"], ["A", "B", "Smith"]]),
    ("Émile Zola, Henry Feilden's son; 'Ann Lee' and Ann ’Lee", [["Émile", "Zola"], ["Henry", "Feilden's"]]),
    ("Paris. London is big. Charles de", [["Paris", "London"], ["Charles", "de"]]),
])
def test_name_runs_are_the_runs_of_capitalised_words_as_written(text, runs):
    assert name_runs(text) == runs


def test_the_full_name_check_is_linear_in_a_run_of_capitalised_words():
    """One run of names ("John Smith Jones John Smith Jones ..."): every "John" before every "Smith" used to be
    tried with the rest of the run copied, cubic (6,000 words took a minute). Twice the run folds about twice
    the words."""
    reading = Reading("Where was John Smith born?")

    def folds(words: int, end: str = "") -> int:
        text = " ".join(["John Smith Jones"] * (words // 3)) + end
        before = _calls(fold)
        assessed = reading.assess(text)
        assert assessed.full_name == bool(end)  # each Smith is followed by another name, but for an ending one
        return _calls(fold) - before

    small, large = folds(3_000), folds(6_000)
    assert large <= 2.5 * small, (small, large)
    assert folds(6_000, " John Smith.") <= 2.5 * small


# -- correct() over many passages -----------------------------------------------------------------------------
class Constant(RetrievalEvaluator):
    """Scores every text the same: what is left to time is the walk itself."""

    def evaluate(self, query, texts):
        return Evaluation([-0.9] * len(texts))


def test_correct_is_linear_in_the_number_of_passages():
    """A membership test on a list per passage made `correct()` quadratic (32k nodes took 13 s). With the
    evaluator's cost taken out, twice the passages take about twice the time, measured in one run."""
    corrector = Corrector(evaluator=Constant())

    def seconds(n: int) -> float:
        """The best of five runs, the garbage collector paused (its passes over 20,000 results are not ours)."""
        passages = [f"passage {i}" for i in range(n)]
        best = float("inf")
        gc.collect()
        gc.disable()
        try:
            for _ in range(5):
                started = time.perf_counter()
                result = corrector.correct("Where was Henry Feilden born?", passages)
                best = min(best, time.perf_counter() - started)
        finally:
            gc.enable()
        assert len(result.scores) == n
        return best

    seconds(1_000)  # warm up
    small, large = seconds(10_000), seconds(20_000)
    assert large < 3.0 * small, (small, large)


# -- the lexical best sentence ----------------------------------------------------------------------------------
def test_the_best_sentence_is_looked_for_where_the_reading_reads():
    """A 4 MB passage was split and scored sentence by sentence (6.5 s) while the reading stops at READ_CHARS:
    the best-sentence search stops there too, and so does the whole text's measure (segmenting or stemming
    megabytes cost seconds). An answering sentence inside counts; past it, nowhere."""
    judge = LexicalEvaluator(reads_answer=False)
    question = "Where was Henry Feilden born?"
    answer = "Henry Feilden was born in Blackburn."
    filler = "The weather was mild in the valley that year. " * (READ_CHARS // 46 + 1)
    inside, past, none = judge.evaluate(question, [filler[:READ_CHARS - 200] + answer + filler,
                                                   filler + answer, filler + filler]).scores
    assert inside > past == none == -1.0


# -- the Chinese and German blends and what the text caches keep ---------------------------------------------
@pytest.mark.parametrize(("cached", "text_of"), [
    (sentence_spans, lambda i, n: ("zh", _han(i, n - 3) + "。")),  # every text argument counts, "zh" too
    (char_bigrams, lambda i, n: _han(i, n)),
    (compound_grams, lambda i, n: (f"Zugspitzbahn{i} " * n)[:n]),
    (_han_tokens, lambda i, n: ("ja", _han(i, n - 2))),
])
def test_text_caches_keep_a_bounded_number_of_characters(cached, text_of):
    """The caches were keyed by whole texts, 20,000 or 50,000 of them (0.7-1.4 GB after a few 1 MB passages):
    they keep at most `max_chars` characters of text, and nothing of a text longer than `entry_chars`."""
    cached.cache_clear()
    for i in range(cached.max_chars // cached.entry_chars + 5):
        cached(*_arguments(text_of(i, cached.entry_chars)))
        assert cached.cache_info().chars <= cached.max_chars
    held = cached.cache_info()
    assert held.entries and held.chars > cached.max_chars - cached.entry_chars
    longer = _arguments(text_of(-1, cached.entry_chars + 1))
    assert cached(*longer) == cached.__wrapped__(*longer)
    assert cached.cache_info().entries == held.entries and cached.cache_info().chars == held.chars
    cached.cache_clear()


def _han(seed: int, n: int) -> str:
    return "".join(chr(0x4E00 + (seed * 7919 + j) % 20_000) for j in range(n))


def _arguments(made):
    return made if isinstance(made, tuple) else (made,)


def test_a_german_blend_reads_sentences_only_within_the_bound():
    """The German blend cut 5-grams for every sentence of a 1 MB passage (and kept them): past `READ_CHARS`,
    a longer passage adds no sentence to cut, only its whole text once."""
    judge = LexicalEvaluator(language="de")
    question = "Wann wurde der Grundstein des Kölner Doms gelegt?"

    def cuts(chars: int) -> int:
        passage = "".join(f"Satz {i} erzählt vom Kölner Dom und seinem Grundstein. " for i in range(chars // 50))
        compound_grams.cache_clear()
        judge.evaluate(question, [passage])
        return compound_grams.cache_info().misses

    assert cuts(int(1.1 * READ_CHARS)) == cuts(int(2.2 * READ_CHARS))
