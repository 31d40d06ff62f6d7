"""The one vocabulary of a data row, read by `crag run`, `crag calibrate`, `crag report` and the benchmarks.

A data file is JSON Lines, one object a line, in either shape (both may share a file):

- a *record*: a question with its retrieved passages (PopQA/CRAG's `ctxs`), each passage its text alone
  or an object;
- a *pair row*: a question and one passage in the row itself; the pair rows of one question make one
  record. In a pair row `id` names the passage, and the record is named by its question id.

Each field goes by several names, looked for in this order (the first one present is read):

| field | names |
|---|---|
| question | `query`, `question` |
| record id | `id`, `idx`, `question_id` |
| a pair row's question id | `query_id`, `question_id` (else the question itself) |
| passages | `ctxs`, `passages` |
| passage text | `passage`, `text`, `content` |
| passage title, id, score | `title`, `id`, `score` |
| relevance label | `label`, `relevant`: true/false, a number (> 0 is relevant), "yes"/"no", "relevant"/"irrelevant" |
| gold answers | `answers` (a list), `answer` (one) |

A passage object's other fields travel in `Passage.metadata`; a row's other fields (`split`, `pair_type`, a
data set's own) in `Record.fields`. A field of the wrong kind raises ValueError naming the file, the line
and the field (`data.jsonl:3: ctxs[2].text: ...`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from .files import MAX_DATA_BYTES, json_lines
from .types import Passage

__all__ = [
    "ANSWERS", "LABEL", "PASSAGES", "QUESTION", "TEXT", "Record", "answers_of", "id_of", "iter_rows", "named",
    "read_records",
]

QUESTION = ("query", "question")
RECORD_ID = ("id", "idx", "question_id")
PAIR_QUESTION_ID = ("query_id", "question_id")
PASSAGES = ("ctxs", "passages")
TEXT = ("passage", "text", "content")
TITLE = ("title",)
PASSAGE_ID = ("id",)
SCORE = ("score",)
LABEL = ("label", "relevant")
ANSWERS = ("answers", "answer")

_PASSAGE_FIELDS = frozenset((*TEXT, *TITLE, *PASSAGE_ID, *SCORE, *LABEL))
_RELEVANT = frozenset(("1", "true", "yes", "relevant", "+1"))
_IRRELEVANT = frozenset(("0", "-1", "false", "no", "irrelevant"))


@dataclass
class Record:
    """One question of a data file with its passages: a record row, or the pair rows of one question.

    `id` is the record's own id (None when it has none). `key` tells records apart all the same: the own id,
    else a pair row's question, else a hash of the record's content (a line added elsewhere in the file
    never changes it, as a line number would). `labels` holds each passage's relevance label (None where it
    has none); `where` is the file and line it starts on."""

    where: str
    question: str
    passages: list[Passage]
    labels: list[bool | None]
    id: str | None
    key: str
    answers: tuple[str, ...] = ()
    fields: dict[str, object] = field(default_factory=dict)
    pair: bool = False

    @property
    def split(self) -> str | None:
        """The row's `split` column (train, eval, ...), if it has one."""
        value = self.fields.get("split")
        return value if isinstance(value, str) else None


def named(row: Mapping[str, object], names: Sequence[str]) -> tuple[str, object] | None:
    """(name, value) of the first of `names` the row holds, or None."""
    for name in names:
        if name in row:
            return name, row[name]
    return None


def question_of(row: Mapping[str, object], where: str) -> str:
    """The row's question (`query`, else `question`); anything but text raises, naming the field."""
    found = named(row, QUESTION)
    if found is None or not isinstance(found[1], str):
        name = f"{found[0]}: " if found else ""
        kind = type(found[1]).__name__ if found else "nothing"
        raise ValueError(f"{where}: {name}the question must be text (`query` or `question`), got {kind}")
    return found[1]


def id_of(row: Mapping[str, object], names: Sequence[str] = RECORD_ID) -> str | None:
    """The row's id under the first of `names` it holds, as text (1 and "1" are one id); None without one."""
    found = named(row, names)
    return None if found is None or found[1] is None else str(found[1])


def label_of(value: object, where: str) -> bool:
    """A relevance label read as True or False; anything else raises, naming `where`."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value > 0
    if isinstance(value, str) and value.strip().lower() in _RELEVANT:
        return True
    if isinstance(value, str) and value.strip().lower() in _IRRELEVANT:
        return False
    raise ValueError(f"{where}: cannot read {value!r} as a relevance label")


def answers_of(row: Mapping[str, object], where: str) -> tuple[str, ...]:
    """The row's gold answers (`answers`, or one `answer`); none when it has neither."""
    found = named(row, ANSWERS)
    if found is None or found[1] is None:
        return ()
    values = [found[1]] if isinstance(found[1], str) else found[1]
    if not isinstance(values, list) or not all(isinstance(a, str) for a in values):
        raise ValueError(f"{where}: `{found[0]}` must be a list of strings (or one `answer` string)")
    return tuple(values)


def passage_of(value: object, where: str, at: str = "") -> tuple[Passage, bool | None]:
    """A passage (text, title, id, score; an object's other fields in its metadata) and its label, from its
    text alone or an object; `at` names it in errors (`ctxs[2]`)."""
    if isinstance(value, str):
        return Passage(value), None
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: {at}: a passage must be text or an object with a text (`passage`, `text` or "
                         f"`content`), not {type(value).__name__}")
    prefix = f"{at}." if at else ""
    text = named(value, TEXT)
    if text is None or not isinstance(text[1], str):
        field_name = f"{prefix}{text[0]}" if text else f"{at or 'passage'}"
        got = type(text[1]).__name__ if text else "no text"
        raise ValueError(f"{where}: {field_name}: a passage needs a text (`passage`, `text` or `content`), got {got}")
    title = value.get("title")
    passage_id = value.get("id")
    score = value.get("score")
    if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
        raise ValueError(f"{where}: {prefix}score: must be a number, got {type(score).__name__}")
    label = named(value, LABEL)
    metadata = {k: v for k, v in value.items() if k not in _PASSAGE_FIELDS} if at else {}
    passage = Passage(text[1], id=None if passage_id is None else str(passage_id),
                      title=str(title) if title not in (None, "") else None,
                      score=None if score is None else float(score), metadata=metadata)
    return passage, None if label is None or label[1] is None else label_of(label[1], f"{where}: {prefix}{label[0]}")


def content_key(row: Mapping[str, object]) -> str:
    """A record's content as a short hash: the key of a record without an id."""
    canonical = json.dumps(row, sort_keys=True, ensure_ascii=False, default=str)
    return "sha1:" + hashlib.sha1(canonical.encode()).hexdigest()[:16]


def record_of(row: object, where: str, *, need_question: bool = True) -> Record:
    """The record one row holds: a record with its passages, or a pair row's question and passage. Without
    `need_question`, a row may name its question by its id alone (its question is then "")."""
    if not isinstance(row, Mapping):
        raise ValueError(f"{where}: a line must hold a JSON object, not {type(row).__name__}")
    question = question_of(row, where) if need_question or named(row, QUESTION) else ""
    answers = answers_of(row, where)
    listed = named(row, PASSAGES)
    if listed is None:  # a pair row
        passage, label = passage_of(row, where)
        own = id_of(row, PAIR_QUESTION_ID)
        rest = {k: v for k, v in row.items() if k not in {*QUESTION, *PAIR_QUESTION_ID, *_PASSAGE_FIELDS, *ANSWERS}}
        return Record(where, question, [passage], [label], own, own or question, answers, rest, pair=True)
    name, value = listed
    if not isinstance(value, list):
        raise ValueError(f"{where}: {name}: must be a list of passages, got {type(value).__name__}")
    own = id_of(row)
    key = own if own is not None else content_key(row)
    read = [passage_of(p, where, f"{name}[{i}]") for i, p in enumerate(value)]
    rest = {k: v for k, v in row.items() if k not in {*QUESTION, *RECORD_ID, name, *ANSWERS}}
    return Record(where, question, _named([p for p, _ in read], key), [y for _, y in read], own, key, answers, rest)


def _named(passages: list[Passage], key: str) -> list[Passage]:
    """The passages, one without an id of its own named `KEY:POSITION` (its record's key and its place)."""
    return [p if p.id is not None else Passage(p.text, f"{key}:{i}", p.title, p.url, p.score, p.metadata)
            for i, p in enumerate(passages)]


def iter_rows(path: str | os.PathLike[str], kind: str = "data", *, max_bytes: int | None = MAX_DATA_BYTES,
              need_question: bool = True) -> Iterator[Record]:
    """Each row of a JSONL file as a `Record`, in file order, pair rows one by one (`read_records` gathers
    them); `kind` names the file in errors."""
    for number, row in json_lines(path, kind, max_bytes):
        yield record_of(row, f"{path}:{number}", need_question=need_question)


def read_records(path: str | os.PathLike[str], kind: str = "data", *, max_bytes: int | None = MAX_DATA_BYTES,
                 need_question: bool = True) -> list[Record]:
    """The records of a JSONL file, in the order they first appear: each record row, and the pair rows of
    each question gathered into one (their order kept)."""
    records: list[Record] = []
    gathered: dict[str, Record] = {}
    for record in iter_rows(path, kind, max_bytes=max_bytes, need_question=need_question):
        if not record.pair:
            records.append(record)
        elif record.key in gathered:
            gathered[record.key].passages.extend(record.passages)
            gathered[record.key].labels.extend(record.labels)
        else:
            gathered[record.key] = record
            records.append(record)
    for record in gathered.values():
        record.passages = _named(record.passages, record.key)
    return records
