"""Question–answer pairs, and the rule that labels a passage by whether it holds a gold answer."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..files import checked_file
from ..text.writing_systems import has_cjk
from ..types import Passage

#: The largest question–answer or retrieved-passages file read (a JSONL of questions, not a corpus).
MAX_QA_BYTES = 512 * 1024 * 1024


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
        if not needle:
            continue
        if has_cjk(needle):
            if needle in haystack:
                return True
            continue
        if re.search(rf"(?<![^\W_]){re.escape(needle)}(?![^\W_])", haystack):
            return True
    return False


def qa_pair(value: object, where: str) -> QAPair:
    """A `QAPair` from itself, a (question, answers) tuple or a mapping with `question` and `answers` (a
    list, or one `answer`), with an optional `id`; anything else raises ValueError naming `where`."""
    question: object
    answers: object
    question_id: object
    if isinstance(value, QAPair):
        question, answers, question_id = value.question, value.answers, value.id
    elif isinstance(value, Mapping):
        question, answers = value.get("question"), value.get("answers", value.get("answer"))
        question_id = value.get("id", value.get("question_id"))
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
    return QAPair(question, tuple(answers), None if question_id is None else str(question_id))


def json_lines(path: str | Path, kind: str) -> Iterator[tuple[int, object]]:
    """(line number, value) of each non-blank line of a JSONL file (a bounded regular file, `kind` naming it in
    errors); a line that is not JSON raises ValueError naming the file and line."""
    with checked_file(Path(path), kind, MAX_QA_BYTES).open("rb") as lines:
        for number, raw in enumerate(lines, 1):
            if not raw.strip():
                continue
            try:
                yield number, json.loads(raw.decode("utf-8"))
            except (ValueError, RecursionError) as error:  # UnicodeDecodeError is a ValueError
                raise ValueError(f"{path}:{number}: not a JSON line ({type(error).__name__}: {error})"[:300]) from None


def read_qa(path: str | Path) -> list[QAPair]:
    """The question–answer pairs of a JSONL file: one `{"question": ..., "answers": [...]}` a line (or
    `"answer": "..."`; optional `"id"`). A malformed line raises ValueError naming the file and line; an
    empty file raises too."""
    pairs = [qa_pair(value, f"{path}:{number}") for number, value in json_lines(path, "question-answer")]
    if not pairs:
        raise ValueError(f"{path}: no question-answer pairs")
    return pairs


def _passage(value: object, where: str) -> Passage:
    if isinstance(value, str):
        return Passage(value)
    if isinstance(value, Mapping) and isinstance(value.get("text", value.get("content")), str):
        title = value.get("title")
        return Passage(value.get("text", value.get("content")), id=None if value.get("id") is None
                       else str(value["id"]), title=title if isinstance(title, str) else None)
    raise ValueError(f"{where}: each passage must be text or an object with `text` (and optional `title`, `id`)")


def read_retrieved(path: str | Path, questions: Sequence[QAPair]) -> list[list[Passage]]:
    """The retrieved passages of each question, in the order of `questions`, from a JSONL file: one
    `{"id" or "question": ..., "passages": [text or {"text", "title"}, ...]}` a line, matched to a question by
    `id` where the question has one, else by its text. A question with no line raises, naming it."""
    found: dict[str, list[Passage]] = {}
    for number, value in json_lines(path, "retrieved-passages"):
        where = f"{path}:{number}"
        if not isinstance(value, Mapping) or not isinstance(value.get("passages"), list):
            raise ValueError(f"{where}: expected an object with `passages` (a list) and `id` or `question`")
        key = value.get("id", value.get("question"))
        if key is None:
            raise ValueError(f"{where}: no `id` or `question` to match it to a question")
        found[str(key)] = [_passage(p, where) for p in value["passages"]]
    missing = [q.id or q.question for q in questions if (q.id or q.question) not in found]
    if missing:
        raise ValueError(f"{path}: no retrieved passages for {len(missing)} question(s), e.g. {missing[0]!r}")
    return [found[q.id or q.question] for q in questions]
