"""The follow-up rule: a question that names no one but a pronoun cannot be judged on its own.

"When was he born?" matches any passage about anyone born: it is a chat follow-up, and the Corrector judges
it Ambiguous at most, whatever its evaluator (`crag_shared.corrector.walk`). The rule reads the question's
language's follow-up table, `tables/<code>/pronouns.txt`, and applies only in a language that has one
(`follow_up_languages()`: English, German, French, Spanish); elsewhere a pronoun follow-up is not caught.
A question with a pronoun is specified when it also holds

- in English (read by `Reading`): a name (a capitalised word that is not a question word), a number, or
  two relation words ("Where did she study medicine?");
- in the other languages (read by their `Analyzer`): a number, a capitalised word after the first (not in
  the languages that capitalise every noun, `tables/mul/capitalised_nouns.txt`), or two content words
  that are neither stopwords nor pronouns. Elided words are read without their elision
  (`tables/fr/elisions.txt`: "qu'il" is "il").
"""

from __future__ import annotations

import re
from functools import lru_cache

from .analysis import analyzer
from .knowledge import has_table, languages_with, table_words, word_set
from .reading import Reading
from .words import words

__all__ = ["follow_up_languages", "follow_up_pronoun", "has_follow_up_table"]

#: The table a language needs for the rule: the pronouns that stand for a question's subject.
PRONOUNS = "pronouns"


def follow_up_languages() -> tuple[str, ...]:
    """The languages with a follow-up table, where the rule applies."""
    return languages_with(PRONOUNS)


def has_follow_up_table(language: str) -> bool:
    """Whether the rule applies to questions in `language` (a code, not "auto")."""
    return has_table(language, PRONOUNS)


def follow_up_pronoun(question: str, language: str = "en") -> str | None:
    """The pronoun that stands for the question's subject when the question names nothing else it could be
    about ("When was he born?": "he"; "Wann wurde sie geboren?" in "de": "sie"), else None, and None in a
    language without a follow-up table. `language` is a code ("de"), not "auto": resolve it first."""
    if not has_follow_up_table(language):
        return None
    pronouns = word_set(language, PRONOUNS)
    if language == "en":
        return _english(question, pronouns)
    return _by_analyzer(question, language, pronouns)


def _english(question: str, pronouns: frozenset[str]) -> str | None:
    pronoun = next((w.lower() for w in words(question) if w.lower() in pronouns), None)
    if pronoun is None:
        return None
    reading = Reading(question)
    return None if reading.entity or len(reading.relation) > 1 else pronoun


def _by_analyzer(question: str, language: str, pronouns: frozenset[str]) -> str | None:
    tokens = analyzer(language).tokens(_elided(language).sub("", question))
    pronoun = next((t.surface.casefold() for t in tokens if t.surface.casefold() in pronouns), None)
    if pronoun is None:
        return None
    names = language not in word_set("mul", "capitalised_nouns")
    content = set()
    for position, token in enumerate(tokens):
        if token.surface.casefold() in pronouns:
            continue
        if any(c.isdigit() for c in token.surface) or (
                names and position and not token.stop and token.surface[:1].isupper()):
            return None  # a number or a name
        if not token.stop and len(token.term) > 1:
            content.add(token.term)
    return None if len(content) > 1 else pronoun


_NOTHING = re.compile(r"(?!)")


@lru_cache(maxsize=16)
def _elided(language: str) -> re.Pattern[str]:
    """The language's elided words with their apostrophe ("qu'" in "qu'il"), or a pattern that never matches."""
    if not has_table(language, "elisions"):
        return _NOTHING
    elisions = sorted((e.rstrip("'’") for e in table_words(language, "elisions")), key=len, reverse=True)
    return re.compile(rf"\b(?:{'|'.join(map(re.escape, elisions))})['’]", re.IGNORECASE)
