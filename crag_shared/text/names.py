"""Names in English text: runs of capitalised words ("John Smith", "Ludwig van Beethoven"), a question's names
as (first, last), and whether a text names one in full (not its surname alone, not inside a longer name)."""

from __future__ import annotations

import re
import sys
from functools import lru_cache

from .knowledge import word_set
from .words import STOPWORDS, fold

_PARTICLES = word_set("en", "name_particles")
_SUFFIXES = word_set("en", "name_suffixes")
_JOINER = r"[\s\"“”‘]*"  # between two words of one name: spaces, quotes round a nickname


def name_runs(text: str) -> list[list[str]]:
    """Runs of two or more capitalised words as written (particles such as "van", initials and quoted nicknames
    inside); any other punctuation between two words ends a run ("John Finlay (April 22, 1837)"). Found by one
    regular expression (`run_patterns`), so a passage costs a pass in C, not a Python step per word."""
    return [_WORD.findall(run) for run in run_texts(text)]


def run_texts(text: str) -> list[str]:
    """The name runs of `text` as written, each one string (`name_runs` without splitting them into words)."""
    basic, every = run_patterns()
    return (basic if text.isascii() or not _ASTRAL.search(text) else every).findall(text)


POSSESSIVE = re.compile(r"['’]s$")
_WORD = re.compile(r"[\w'’]+")  # a word as a name run holds it: a period may follow (an initial, "Jr.")
_ASTRAL = re.compile("[\U00010000-\U0010FFFF]")


@lru_cache(maxsize=1)
def run_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The name-run pattern for text within the Basic Multilingual Plane, and for any text.

    A run is a capitalised word (one whose first character `str.isupper` calls upper case) where a word starts,
    then one or more words that are capitalised or particles, each after nothing but `_JOINER`; a word is all its
    `_WORD` characters and an optional period. The first holds only the upper-case letters below U+10000: a class
    of those compiles to a table the matcher scans for in C, while one upper-case letter beyond (mathematical
    capitals, Deseret) makes it test each character against every letter in turn."""
    word_character = re.compile(r"\w")
    upper = [c for c in map(chr, range(sys.maxunicode + 1)) if c.isupper() and word_character.match(c)]
    basic = "".join(c for c in upper if c <= "\uffff")
    particle = rf"(?:{'|'.join(map(re.escape, sorted(_PARTICLES, key=len, reverse=True)))})(?![\w'’])\.?"

    def run(first: str) -> re.Pattern[str]:
        capitalised = rf"{first}[\w'’]*+\.?"
        # the class first, the look back at a word start after it: the matcher skips to a capital in C
        return re.compile(rf"{first}(?<![\w'’](?s:.))[\w'’]*+\.?(?:{_JOINER}(?:{capitalised}|{particle}))+")

    return run(f"[{basic}]"), run(f"[{''.join(upper)}]")


def names_of(question: str) -> list[tuple[str, str]]:
    """(first, last) of each name of two or more capitalised words in the question, folded (particles,
    suffixes and question words dropped)."""
    found = []
    for run in name_runs(question):
        kept = [fold(w) for w in run if fold(w) not in _SUFFIXES and w not in _PARTICLES
                and w.lower() not in STOPWORDS]
        if len(kept) >= 2:
            found.append((kept[0], kept[-1]))
    return found


def names_in_full(name: tuple[str, str], runs: list[str]) -> bool:
    """Whether a text's name runs (`run_texts`) name (first, last) in full: a run with the first word (or its
    initial) and, later, the last, followed by nothing but a suffix or an abbreviation ("QC", "MP"), not by
    another name. One pass over each run's words, and none over a run in ASCII without the last word's
    letters (`letters_of`)."""
    first, last = name
    core = letters_of(last)
    for text in runs:
        if text.isascii() and core not in text.lower():
            continue
        run = _WORD.findall(text)
        folded = list(map(fold, run))
        if last not in folded:
            continue
        start = next((i for i, word in enumerate(folded) if word == first or (len(first) == 1 and word[:1] == first)),
                     None)
        if start is None:
            continue
        tail = len(run)  # run[tail:] is the longest end of the run that holds only suffixes and abbreviations
        while tail and (folded[tail - 1] in _SUFFIXES or run[tail - 1].isupper()):
            tail -= 1
        if last in folded[max(start + 1, tail - 1):]:
            return True
    return False


def letters_of(last: str) -> str:
    """What an ASCII word that folds to `last` holds, lower-cased: `last` ("Smiths", "Smith's"), or for a last
    word in "y" all but the "y" ("Kennedies" holds "kenned")."""
    return last[:-1] if last.endswith("y") else last
