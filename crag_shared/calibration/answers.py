"""Question–answer pairs, and the rule that labels a passage by whether it holds a gold answer."""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..files import json_lines
from ..rows import ANSWERS, QUESTION, Record, answers_of, id_of, named, read_records
from ..text.words import STOPWORDS, terms
from ..text.writing_systems import has_cjk
from ..types import Passage

#: The longest gold answer read: an answer is the few words a passage must hold, and matching it is linear
#: in the passage only while the answer is short.
MAX_ANSWER_CHARS = 1000


@dataclass(frozen=True)
class QAPair:
    """A question and its gold answers (aliases included); `id` names it in reports and in a retrieved file."""

    question: str
    answers: tuple[str, ...]
    id: str | None = None


def normalized(text: str) -> str:
    """Text as answers are matched in it: Unicode NFKC, case-folded, whitespace runs as one space."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def holds_answer(text: str, answers: Iterable[str]) -> bool:
    """Whether `text` holds any of `answers`: after `normalized` on both sides, the answer occurs with no
    letter or digit right before or after it ("1879" in "in 1879." but not in "18790"; "Ulm" in "Ulm," but not
    in "Ulmer"). An empty answer matches nothing. For scripts written without spaces (Chinese, Japanese)
    the boundary rule is not applied: any occurrence counts."""
    haystack = normalized(text)
    for answer in answers:
        needle = normalized(answer)
        if needle and (needle in haystack if has_cjk(needle) else _bounded_occurrence(needle, haystack)):
            return True
    return False


def _bounded_occurrence(needle: str, haystack: str) -> bool:
    """Whether `needle` occurs in `haystack` with no letter or digit right before or after it: substring
    search, no pattern built from the answer (a regex of a huge answer exhausts memory compiling it)."""
    start = haystack.find(needle)
    while start != -1:
        end = start + len(needle)
        if (start == 0 or not haystack[start - 1].isalnum()) and (end == len(haystack) or
                                                                  not haystack[end].isalnum()):
            return True
        start = haystack.find(needle, start + 1)
    return False


def weak_answers(pairs: Iterable[QAPair]) -> list[tuple[str, str]]:
    """(question id or question, answer) of each answer too common to label passages by: one character
    ("a", "7", "金"), or only stopwords ("the", "it is"). Such an answer occurs in most passages, so most
    passages would be labelled as holding it."""
    weak = []
    for pair in pairs:
        for answer in pair.answers:
            needle = normalized(answer)
            words = terms(needle)
            if len(needle) == 1 or (needle and words and all(w in STOPWORDS for w in words)):
                weak.append((pair.id or pair.question, answer))
    return weak


def qa_pair(value: object, where: str) -> QAPair:
    """A `QAPair` from itself, a (question, answers) tuple or a row of the one row vocabulary
    (`crag_shared.rows`: `question` or `query`, `answers` or one `answer`, an optional `id`, `idx` or
    `question_id`); anything else raises ValueError naming `where`."""
    question: object
    answers: object
    question_id: object
    if isinstance(value, QAPair):
        question, answers, question_id = value.question, value.answers, value.id
    elif isinstance(value, Mapping):
        found = named(value, QUESTION)
        question = found[1] if found else None
        answers = answers_of(value, where) if named(value, ANSWERS) else None
        question_id = id_of(value)
    elif isinstance(value, tuple) and len(value) == 2:
        (question, answers), question_id = value, None
    else:
        raise ValueError(f"{where}: expected a question with answers, got {type(value).__name__}")
    if not isinstance(question, str) or not question.strip():
        raise ValueError(f"{where}: `question` must be non-empty text")
    answers = [answers] if isinstance(answers, str) else answers
    if not isinstance(answers, (list, tuple)) or not all(isinstance(a, str) for a in answers):
        raise ValueError(f"{where}: `answers` must be a list of strings (or one `answer` string)")
    if not any(a.strip() for a in answers):
        raise ValueError(f"{where}: no non-empty answer for {question!r}")
    longest = max(len(a) for a in answers)
    if longest > MAX_ANSWER_CHARS:
        raise ValueError(f"{where}: an answer of {longest:,} characters, more than the {MAX_ANSWER_CHARS:,} an "
                         "answer may have (an answer is the words a passage must hold, not a passage)")
    return QAPair(question, tuple(answers), None if question_id is None else str(question_id))


def read_qa(path: str | Path) -> list[QAPair]:
    """The question–answer pairs of a JSONL file: one `{"question": ..., "answers": [...]}` a line (or
    `"answer": "..."`; optional `"id"`; any row of the one row vocabulary, so a `crag run` data file with
    answers serves too). A malformed line raises ValueError naming the file and line; an empty file raises
    too."""
    pairs = [qa_pair(value, f"{path}:{number}") for number, value in json_lines(path, "question-answer")]
    if not pairs:
        raise ValueError(f"{path}: no question-answer pairs")
    return pairs


def read_retrieved(path: str | Path, questions: Sequence[QAPair]) -> list[list[Passage]]:
    """The retrieved passages of each question, in the order of `questions`, from a JSONL file read in the
    one row vocabulary (`crag_shared.rows`), as `crag run` reads its data: a record (`{"id" or "question":
    ..., "passages" or "ctxs": [text or {"text", "title", ...}, ...]}`) or pair rows a question. A record is
    matched to a question by `id` where both have one, else by the question's text. A question with no
    record raises, naming it. So does an id two questions share, or one that two records share, and a
    question matched by its text to two records: each would be given one passage list, and thresholds
    fitted on the wrong passages."""
    repeated = sorted(i for i, n in Counter(q.id for q in questions if q.id is not None).items() if n > 1)
    if repeated:
        named_ids = ", ".join(repr(i) for i in repeated[:5]) + (f" and {len(repeated) - 5} more" if len(repeated) > 5
                                                               else "")
        raise ValueError(f"ids used by more than one question: {named_ids}: give each question its own id, so "
                         "each is matched to its own passages")
    by_id: dict[str, list[Record]] = {}
    by_question: dict[str, list[Record]] = {}
    for record in read_records(path, "retrieved-passages", need_question=False):
        if record.id is None and not record.question:
            raise ValueError(f"{record.where}: no `id` or question to match it to a question")
        if record.id is not None:
            by_id.setdefault(record.id, []).append(record)
        if record.question:
            by_question.setdefault(record.question, []).append(record)
    found = [by_id[q.id] if q.id is not None and q.id in by_id else by_question.get(q.question)
             for q in questions]
    missing = [q.id or q.question for q, records in zip(questions, found) if records is None]
    if missing:
        raise ValueError(f"{path}: no retrieved passages for {len(missing)} question(s), e.g. {missing[0]!r}")
    for question, records in zip(questions, found):
        if records is not None and len(records) > 1:
            lines = ", ".join(r.where.rsplit(":", 1)[-1] for r in records)
            name = f"id {question.id!r}" if question.id in by_id else f"question {question.question!r}"
            raise ValueError(f"{path}: {name} has {len(records)} records (lines {lines}): give each record its "
                             "own id, so each question is matched to its own passages")
    return [records[0].passages if records else [] for records in found]
