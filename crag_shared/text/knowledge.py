"""Language knowledge read from the packaged tables (`tables/<language>/<kind>.txt`), each file once.

A table is UTF-8 text. Blank lines and lines starting with `#` (each file opens with one saying what it
holds and who reads it) are not entries. A word table holds words separated by spaces or line breaks; a
line table holds one entry a line (entries with spaces, such as "served as"); a key table holds
"key: value ..." lines. `mul` (ISO 639-2: several languages) holds the tables that serve any language.
Adding a language's knowledge is adding its files: see the languages guide.
"""

from __future__ import annotations

from functools import cache, lru_cache
from importlib.resources import files
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

__all__ = ["has_table", "languages_with", "table_keys", "table_lines", "table_words", "word_set"]

#: The tables that serve any language (ISO 639-2 "mul").
ANY_LANGUAGE = "mul"


def _tables() -> Traversable:
    return files(__package__ or __name__) / "tables"


def _table(language: str, kind: str) -> Traversable:
    return _tables() / language / f"{kind}.txt"


@lru_cache(maxsize=1024)
def has_table(language: str, kind: str) -> bool:
    """Whether `language` has a table of this kind (its code as written: "de", not "auto")."""
    return language.isalpha() and _table(language, kind).is_file()


@cache
def table_lines(language: str, kind: str) -> tuple[str, ...]:
    """A line table's entries, in file order: each line stripped, comments and blank lines left out."""
    text = _table(language, kind).read_text(encoding="utf-8")
    return tuple(line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#"))


@cache
def table_words(language: str, kind: str) -> tuple[str, ...]:
    """A word table's words, in file order."""
    return tuple(word for line in table_lines(language, kind) for word in line.split())


@cache
def word_set(language: str, kind: str) -> frozenset[str]:
    """A word table's words as a set (for membership)."""
    return frozenset(table_words(language, kind))


@cache
def table_keys(language: str, kind: str) -> tuple[tuple[str, str], ...]:
    """A key table's (key, value) pairs, in file order; the value is the rest of its line, stripped."""
    pairs = []
    for line in table_lines(language, kind):
        key, colon, value = line.partition(":")
        if not colon:
            raise ValueError(f"table {language}/{kind}.txt: {line!r} is not a 'key: value' line")
        pairs.append((key.strip(), value.strip()))
    return tuple(pairs)


def languages_with(kind: str) -> tuple[str, ...]:
    """The languages that have a table of this kind, sorted."""
    return tuple(sorted(folder.name for folder in _tables().iterdir() if folder.is_dir()
                        and folder.name != ANY_LANGUAGE and (folder / f"{kind}.txt").is_file()))
