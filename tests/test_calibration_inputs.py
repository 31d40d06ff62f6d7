"""Calibration inputs that once fitted thresholds on the wrong data or exhausted memory: ids two questions or
records share, huge answers, evaluators that give too few or NaN scores, answers too common to label
passages by, and files that report fewer bytes than they hold."""

import json
import logging
import math
import os
import tracemalloc
from pathlib import Path

import pytest

from crag_shared import Corrector
from crag_shared.calibration import (
    QAPair,
    calibrate_qa,
    equation_2,
    fit_thresholds,
    holds_answer,
    read_qa,
    read_retrieved,
)
from crag_shared.evaluators import LexicalEvaluator
from crag_shared.evaluators.base import Evaluation, RetrievalEvaluator
from crag_shared.files import MAX_LINE_BYTES, json_lines
from crag_shared.tools.cli import main
from crag_shared.tools.combine import fit_combination
from crag_shared.tools.data import Pair

COOKBOOK = Path(__file__).resolve().parents[1] / "examples" / "cookbook"


def write_lines(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_an_id_two_questions_or_two_records_share_is_refused_naming_it(tmp_path, capsys):
    qa = write_lines(tmp_path / "qa.jsonl", [{"id": "q1", "question": "Where was Ada born?", "answers": ["London"]},
                                            {"id": "q1", "question": "Where did Ada die?", "answers": ["Marylebone"]}])
    retrieved = write_lines(tmp_path / "retrieved.jsonl", [{"id": "q1", "passages": ["Ada was born in London."]}])
    with pytest.raises(ValueError, match="ids used by more than one question: 'q1'"):
        read_retrieved(retrieved, read_qa(qa))  # both questions would be fitted on the birth passages
    assert main(["calibrate", "--qa", str(qa), "--retrieved", str(retrieved), "--out", str(tmp_path / "t.json"),
                 "--plot", ""]) == 2
    assert "ids used by more than one question: 'q1'" in capsys.readouterr().err

    questions = [QAPair("Where was Ada born?", ("London",), "q1"), QAPair("Where did Ada die?", ("Marylebone",))]
    write_lines(retrieved, [{"id": "q1", "passages": ["Ada was born in London."]},
                            {"id": "q1", "passages": ["Ada died in Marylebone."]},
                            {"question": "Where did Ada die?", "passages": ["She died in 1852."]}])
    with pytest.raises(ValueError, match=r"id 'q1' has 2 records \(lines 1, 2\)"):
        read_retrieved(retrieved, questions)
    write_lines(retrieved, [{"id": "q1", "passages": ["Ada was born in London."]},
                            {"question": "Where did Ada die?", "passages": ["She died in 1852."]},
                            {"question": "Where did Ada die?", "passages": ["Ada died in Marylebone."]}])
    with pytest.raises(ValueError, match=r"question 'Where did Ada die\?' has 2 records \(lines 2, 3\)"):
        read_retrieved(retrieved, questions)
    write_lines(retrieved, [{"id": "q1", "passages": ["Ada was born in London."]},
                            {"id": "q2", "question": "Where did Ada die?", "passages": ["Ada died in Marylebone."]}])
    assert [[p.text for p in ps] for ps in read_retrieved(retrieved, questions)] == [
        ["Ada was born in London."], ["Ada died in Marylebone."]]  # one each, as matched


def test_a_huge_answer_is_refused_and_a_long_one_is_matched_without_building_a_pattern(tmp_path):
    huge = "x" * (10 << 20)
    with pytest.raises(ValueError, match=r"qa\[0\]: an answer of 10,485,760 characters, more than the 1,000"):
        calibrate_qa(Corrector(LexicalEvaluator()), [("What?", [huge])], [["x"]], progress=False)
    path = tmp_path / "qa.jsonl"
    path.write_text(json.dumps({"question": "What?", "answers": ["y" * 1001]}) + "\n")
    with pytest.raises(ValueError, match=r"qa.jsonl:1: an answer of 1,001 characters"):
        read_qa(path)
    answer = "answer" * 200_000  # 1.2 MB, one word: as a regex it compiled to about 110 MB
    text = "x " * 500_000 + answer
    tracemalloc.start()
    try:
        assert holds_answer(text, [answer]) and not holds_answer(text + "s", [answer])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20e6, peak  # the normalised texts, no pattern
    assert holds_answer("the Ulmer and then Ulm.", ["Ulm"])  # a later occurrence with boundaries counts
    assert not holds_answer("ulmulm", ["ulm"]) and holds_answer("aaa aa", ["aa"])


class DropsTheLastScore(RetrievalEvaluator):
    """A plug-in with a bug: one score short for every batch."""

    def evaluate(self, query, texts):
        return Evaluation(LexicalEvaluator().score(query, texts)[:-1])


class OverflowingEvaluator(RetrievalEvaluator):
    """A model that overflowed: NaN for the second text."""

    def evaluate(self, query, texts):
        scores = LexicalEvaluator().score(query, texts)
        return Evaluation([math.nan if i == 1 else s for i, s in enumerate(scores)])


PAIRS = [Pair("who built the eiffel tower", "the eiffel tower was built in 1889 by gustave eiffel", True, "a"),
         Pair("who built the eiffel tower", "marie curie won the nobel prize twice", False, "a"),
         Pair("what did marie curie win", "marie curie won the nobel prize twice", True, "b"),
         Pair("what did marie curie win", "paris is the capital of france", False, "b")]


def test_an_evaluator_giving_too_few_scores_is_named_with_the_counts():
    with pytest.raises(ValueError, match="evaluator DropsTheLastScore returned 1 scores for 2 texts"):
        fit_combination([LexicalEvaluator(), DropsTheLastScore()], PAIRS, progress=False)  # was an IndexError
    with pytest.raises(ValueError, match="DropsTheLastScore returned 3 scores for 4 texts"):
        calibrate_qa(Corrector(DropsTheLastScore(), fallback_evaluator=None),
                     [("Who built the Eiffel Tower?", ["Gustave Eiffel"])],
                     [["Built by Gustave Eiffel.", "a", "b c", "d e"]], progress=False)


def test_nan_scores_are_refused_naming_how_many():
    with pytest.raises(ValueError, match=r"1 of 4 scores are NaN \(the first in query 1\)"):
        fit_thresholds([[0.5, 0.1], [0.2, math.nan]], [[True, False], [False, False]])
    with pytest.raises(ValueError, match=r"1 of 2 scores are NaN \(the first in query 0\)"):
        equation_2([math.nan, 0.3], [True, False], 0.5, 0.0)
    with pytest.raises(ValueError, match=r"OverflowingEvaluator failed on 'who built the eiffel tower': 1 of 2 "
                                         r"scores were not finite numbers \(e\.g\. nan\)"):
        fit_combination([LexicalEvaluator(), OverflowingEvaluator()], PAIRS, progress=False)
    with pytest.raises(ValueError, match="query 0 has 1 scores for 2 labels"):
        fit_thresholds([[0.5]], [[True, False]])


def test_answers_too_common_to_label_passages_by_are_named_in_a_warning(caplog):
    pairs = read_qa(COOKBOOK / "qa.jsonl")[:3]
    pairs += [QAPair("Which article comes first?", ("a",), "article"), QAPair("Which word?", ("The",), "word")]
    texts = [json.loads(line)["text"] for line in (COOKBOOK / "corpus.jsonl").open(encoding="utf-8")][:8]
    with caplog.at_level(logging.WARNING, logger="crag"):
        found = calibrate_qa(Corrector(LexicalEvaluator()), pairs, [texts] * len(pairs), progress=False)
    labels = {q.id: q.labels for q in found.queries}
    assert sum(labels["word"]) == 8 and sum(labels["article"]) >= 1  # "the" is "held" by every passage: the repro
    said = [r.getMessage() for r in caplog.records if r.name == "crag"]
    assert any("2 answer(s) too common to label passages by" in m and "'a' (article)" in m and "'The' (word)" in m
               for m in said), said
    assert found.notes == found.summary()["warnings"][:1] and "'a' (article)" in found.notes[0]
    assert found.choose(0.5).notes == found.notes
    plain = calibrate_qa(Corrector(LexicalEvaluator()), pairs[:3], [texts] * 3, progress=False)
    assert plain.notes == []


def test_a_proc_file_is_read_within_its_byte_bound():
    if not os.path.exists("/proc/self/pagemap"):
        pytest.skip("no /proc")
    # /proc/self/pagemap reports 0 bytes and holds gigabytes without a line break
    with pytest.raises(ValueError, match=f"a line longer than {MAX_LINE_BYTES:,} bytes"):
        read_qa("/proc/self/pagemap")
    with pytest.raises(ValueError, match="/proc/self/pagemap: more than the 1,000 bytes it may hold"):
        list(json_lines("/proc/self/pagemap", "question-answer", max_bytes=1000))
