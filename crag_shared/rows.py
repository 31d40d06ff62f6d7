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
from typing import Annotated, Any

from pydantic import AliasChoices, BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError

from .files import MAX_DATA_BYTES, json_lines
from .summary import first_error
from .types import Passage

__all__ = ["DataRow", "PairRow", "PassageRow", "Record", "RecordRow", "iter_rows", "read_records"]

QUESTION = ("query", "question")
RECORD_ID = ("id", "idx", "question_id")
PAIR_QUESTION_ID = ("query_id", "question_id")
PASSAGES = ("ctxs", "passages")
TEXT = ("passage", "text", "content")
LABEL = ("label", "relevant")
ANSWERS = ("answers", "answer")

_PASSAGE_FIELDS = frozenset((*TEXT, "title", "id", "score", *LABEL))
_RELEVANT = frozenset(("1", "true", "yes", "relevant", "+1"))
_IRRELEVANT = frozenset(("0", "-1", "false", "no", "irrelevant"))


def _label(value: object) -> object:
    """A relevance label as True or False: a bool, a number (> 0 is relevant), or one of the words."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value > 0
    if isinstance(value, str) and value.strip().lower() in _RELEVANT | _IRRELEVANT:
        return value.strip().lower() in _RELEVANT
    raise ValueError(f"cannot read {value!r} as a relevance label")


def _identifier(value: object) -> object:
    """An id as text: 1 and "1" are one id."""
    return str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value


Label = Annotated[bool | None, BeforeValidator(_label, json_schema_input_type=bool | float | str | None)]
Identifier = Annotated[str | None, BeforeValidator(_identifier, json_schema_input_type=str | int | None)]
Title = Annotated[str | None, BeforeValidator(lambda v: None if v == "" else _identifier(v))]
Score = Annotated[float | None, Field(strict=True)]
Answers = Annotated[tuple[str, ...], BeforeValidator(lambda v: () if v is None else (v,) if isinstance(v, str) else v,
                                                     json_schema_input_type=list[str] | str | None)]


def _names(*names: str, **default: Any) -> Any:
    """A field that goes by `names`, the first present read; its description lists them."""
    quoted = [f"`{n}`" for n in names]
    listed = f"{', '.join(quoted[:-1])} or {quoted[-1]}" if len(quoted) > 1 else quoted[0]
    return Field(validation_alias=AliasChoices(*names), description=listed, **default)


class PassageRow(BaseModel):
    """A retrieved passage as an object: its text and what a data set may give with it; its other fields travel
    in `Passage.metadata`. A passage may also be its text alone."""

    model_config = ConfigDict(extra="allow", frozen=True)
    text: str = _names(*TEXT)
    title: Title = None
    id: Identifier = None
    score: Score = None
    label: Label = _names(*LABEL, default=None)

    def passage(self, metadata: bool = True) -> Passage:
        """The passage itself (its fields but the text, title, id, score and label as its metadata)."""
        extra = {k: v for k, v in (self.model_extra or {}).items() if k not in _PASSAGE_FIELDS} if metadata else {}
        return Passage(self.text, id=self.id, title=self.title, score=self.score, metadata=extra)


def _passage_item(value: object) -> object:
    if isinstance(value, str):
        return {"text": value}
    if not isinstance(value, Mapping):
        raise ValueError("a passage must be text or an object with a text (`passage`, `text` or `content`)")
    return value


PassageItem = Annotated[PassageRow, BeforeValidator(_passage_item, json_schema_input_type=str | PassageRow)]


class RecordRow(BaseModel):
    """A question with its retrieved passages (PopQA/CRAG's `ctxs`); other fields land in `Record.fields`."""

    model_config = ConfigDict(extra="allow", frozen=True)
    question: str | None = _names(*QUESTION, default=None)
    id: Identifier = _names(*RECORD_ID, default=None)
    passages: list[PassageItem] = _names(*PASSAGES)
    answers: Answers = _names(*ANSWERS, default=())


class PairRow(PassageRow):
    """A question and one passage in the row itself; the pair rows of one question make one record."""

    question: str | None = _names(*QUESTION, default=None)
    question_id: Identifier = _names(*PAIR_QUESTION_ID, default=None)
    answers: Answers = _names(*ANSWERS, default=())


#: A line of a data file: a record or a pair row (the JSON Schema `crag schema row` prints).
DataRow = RecordRow | PairRow
_ANSWERS: TypeAdapter[tuple[str, ...]] = TypeAdapter(Answers)


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


def id_of(row: Mapping[str, object], names: Sequence[str] = RECORD_ID) -> str | None:
    """The row's id under the first of `names` it holds, as text (1 and "1" are one id); None without one."""
    found = named(row, names)
    return None if found is None or found[1] is None else str(found[1])


def answers_of(row: Mapping[str, object], where: str) -> tuple[str, ...]:
    """The row's gold answers (`answers`, or one `answer`); none when it has neither."""
    found = named(row, ANSWERS)
    try:
        return _ANSWERS.validate_python(None if found is None else found[1])
    except ValidationError as error:
        raise ValueError(f"{where}: {first_error(error, found[0] if found else 'answers')}") from None


def content_key(row: Mapping[str, object]) -> str:
    """A record's content as a short hash: the key of a record without an id."""
    canonical = json.dumps(row, sort_keys=True, ensure_ascii=False, default=str)
    return "sha1:" + hashlib.sha1(canonical.encode()).hexdigest()[:16]


def record_of(row: object, where: str, *, need_question: bool = True) -> Record:
    """The record one row holds: a record with its passages, or a pair row's question and passage. Without
    `need_question`, a row may name its question by its id alone (its question is then "")."""
    if not isinstance(row, Mapping):
        raise ValueError(f"{where}: a line must hold a JSON object, not {type(row).__name__}")
    shape: type[RecordRow | PairRow] = PairRow if named(row, PASSAGES) is None else RecordRow
    try:
        read = shape.model_validate(row)
    except ValidationError as error:
        raise ValueError(f"{where}: {first_error(error)}") from None
    if read.question is None and need_question:
        raise ValueError(f"{where}: the question must be text (`query` or `question`), got nothing")
    question = read.question or ""
    fields = {k: v for k, v in (read.model_extra or {}).items() if k not in {*QUESTION, *RECORD_ID, *ANSWERS}}
    if isinstance(read, PairRow):
        fields = {k: v for k, v in fields.items() if k not in {*PAIR_QUESTION_ID, *_PASSAGE_FIELDS}}
        own = read.question_id
        return Record(where, question, [read.passage(metadata=False)], [read.label], own, own or question,
                      read.answers, fields, pair=True)
    key = read.id if read.id is not None else content_key(row)
    fields = {k: v for k, v in fields.items() if k not in PASSAGES}
    return Record(where, question, _named([p.passage() for p in read.passages], key), [p.label for p in read.passages],
                  read.id, key, read.answers, fields)


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
