"""Reading an English question for its answer, not its topic.

A near miss names the question's entity but never states the fact asked for: the person's later life for
a birthplace question, a namesake's career for an occupation question. Word overlap rewards it as much
as the answer. `Reading` splits the question into what it is about (the entity: its capitalised words)
and what it asks (the relation: its other content words, and the kind of answer its question word wants),
and checks a passage for both:

- the relation, stated in one sentence: "born" (or "birth", "birthplace"...), "founded" ("founder"...),
  inflections and agent nouns matched by stem and a small table of irregular forms;
- an answer of the asked kind in that sentence: a place after "in/at/from" for "where", a year or a
  month for "when", a name for "who", a number for "how many", "was a ..." for an occupation;
- the entity's name in full: a multi-word name in the question must stand in the passage as a name that
  starts and ends with the same words (middle names and initials allowed), not only its surname or inside
  a longer name ("Charles Harrison Mason" is not "Charles Harrison").

Each check that fails is a short reason (`Assessment.reason`) that the trace carries. The English words it
reads by (irregular forms, answer kinds, months, number words, name particles...) are the tables in
`tables/en/`.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .knowledge import table_keys, table_lines, table_words, word_set
from .sentences import READ_CHARS, sentence_spans
from .words import STOPWORDS, fold, words

Kind = str  # "place" | "time" | "person" | "number" | "description"

#: A relation word's form -> the key all its forms share (`tables/en/irregular_forms.txt`).
IRREGULAR = {form: canon for canon, forms in table_keys("en", "irregular_forms") for form in forms.split()}
#: Attributes a description answers ("X was an English poet"): the word itself is rarely in the passage.
DESCRIBED = word_set("en", "described")
_QUESTION_WORDS = word_set("en", "question_words")
_AGENT_SUFFIXES = table_words("en", "agent_suffixes")
_PARTICLES = word_set("en", "name_particles")
_SUFFIXES = word_set("en", "name_suffixes")


class _Caseless:
    """A case-insensitive pattern. ASCII text is matched lower-cased by a case-sensitive twin where the pattern's
    letters are all ASCII lower case: the same matches at the same places, without the regex engine folding the
    case of every character it reads (twice as fast); other text, and other patterns, by the pattern itself."""

    def __init__(self, pattern: str) -> None:
        self.pattern = re.compile(pattern, re.IGNORECASE)
        letters = re.sub(r"\\.", "", pattern)  # escapes (\b, \s, \d) are not letters to match
        self._twin = re.compile(pattern) if letters.isascii() and letters == letters.lower() else None

    def search(self, text: str) -> re.Match[str] | None:
        return self._twin.search(text.lower()) if self._twin and text.isascii() else self.pattern.search(text)

    def fullmatch(self, text: str) -> re.Match[str] | None:
        return self._twin.fullmatch(text.lower()) if self._twin and text.isascii() else self.pattern.fullmatch(text)

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        """Matches in order; on ASCII text their groups are lower-cased."""
        return self._twin.finditer(text.lower()) if self._twin and text.isascii() else self.pattern.finditer(text)


_MONTHS = "|".join(table_words("en", "months"))
_TIME = _Caseless(rf"\b(?:1[0-9]{{3}}|20[0-9]{{2}}|[0-9]{{3,4}}s|[0-9]{{1,2}}(?:st|nd|rd|th) century|{_MONTHS})\b")
_NUMBER = _Caseless(rf"\b(\d[\d,.]*|{'|'.join(table_words('en', 'number_words'))})\b")
_PLACE = re.compile(rf"\b(?:{'|'.join(table_words('en', 'place_prepositions'))})\s+(?:the\s+)?([A-Z][\w'’-]+)")
_DESCRIPTION = _Caseless(rf"\b(?:{'|'.join(map(re.escape, table_lines('en', 'description_verbs')))})\s+"
                        r"(?:an?|the)\s+")
_CAPITALISED = re.compile(r"[A-Z][\w'’-]*")
_JOINER = r"[\s\"“”‘]*"  # between two words of one name: spaces, quotes round a nickname


@lru_cache(maxsize=1024)
def _starting_with(prefixes: frozenset[str]) -> Callable[[Iterable[str]], list[str]]:
    """The words among a set of words (tokens: no line breaks) whose first three characters are one of `prefixes`
    (a shorter prefix: the whole word), picked by one regular expression over the words joined by line breaks.
    Cached: compiling it costs more than reading a passage, and questions ask for the same relations."""
    alternatives = sorted((re.escape(p) + (r"[^\n]*" if len(p) >= 3 else "") for p in prefixes), key=len, reverse=True)
    pick = re.compile(rf"\n((?:{'|'.join(alternatives)})(?=\n|\Z))").findall
    return lambda terms: pick("\n" + "\n".join(terms))


def _kind_patterns() -> tuple[tuple[Kind, re.Pattern[str]], ...]:
    """Each answer kind's pattern over a question's start (`tables/en/answer_kinds.txt`), in table order."""
    openings: dict[Kind, list[str]] = {}
    for kind, pattern in table_keys("en", "answer_kinds"):
        openings.setdefault(kind, []).append(pattern)
    return tuple((kind, re.compile(f"^(?:{'|'.join(alternatives)})")) for kind, alternatives in openings.items())


_KIND_PATTERNS = _kind_patterns()


@lru_cache(maxsize=100_000)
def relation_key(term: str) -> str:
    """A relation word's matching key: irregular forms share one ("wrote", "written", "author" -> "write"),
    others their Snowball stem with an agent suffix dropped ("founder", "founded" -> "found")."""
    if term in IRREGULAR:
        return IRREGULAR[term]
    stem = _stemmer().stemWord(term)
    for suffix in _AGENT_SUFFIXES:
        if stem.endswith(suffix) and len(stem) - len(suffix) >= 4:
            return str(_stemmer().stemWord(stem[: -len(suffix)]))
    return str(stem)


@lru_cache(maxsize=1)
def _stemmer() -> Any:  # snowballstemmer ships no type information
    import snowballstemmer

    return snowballstemmer.stemmer("english")


def answer_kind(question: str) -> Kind | None:
    """The kind of answer a question's wording asks for, or None when it does not say."""
    lowered = " ".join(question.lower().split())
    if any(f" {word}" in f" {lowered.rstrip('?')}" for word in DESCRIBED) and not lowered.startswith(
            ("where", "when", "how ")):
        return "description"
    for kind, pattern in _KIND_PATTERNS:
        if pattern.match(lowered):
            if kind == "person" and re.match(r"^(?i:who) (?:is|was|are|were) [A-Z]", " ".join(question.split())):
                return "description"  # "Who was Ada Lovelace?"
            return kind
    return None


@dataclass(frozen=True)
class Assessment:
    """What a passage shows of the question, as evidence that it does not state the answer:

    - `support` in [0, 1]: the share of the relation stated in its best sentence, halved without an answer of
      the asked kind there (ordinary words: weak evidence, since a passage may say it in other words);
    - `has_form`: whether any sentence holds an answer of the asked kind (a date for "when", a number for "how
      many"): without one, it cannot state the answer;
    - `missing`: the question's distinguishing terms it does not hold (a plan, a model number, a version, a
      year, a name): it is about something else;
    - `full_name`: whether it names the question's person in full (a namesake is someone else);
    - `notes`: each piece of evidence in words, by its kind ("term", "form", "name", "relation"), for the
      trace."""

    support: float
    full_name: bool
    has_form: bool = True
    missing: tuple[str, ...] = ()
    notes: tuple[tuple[str, str], ...] = ()

    @property
    def reason(self) -> str:
        """The evidence in words ("" when there is none)."""
        return "; ".join(note for _, note in self.notes)


class Reading:
    """One question, read once: its answer kind, entity terms, relation keys and multi-word names."""

    def __init__(self, question: str) -> None:
        self.kind = answer_kind(question)
        tokens = words(question)
        self.question_terms = frozenset(fold(w) for w in tokens)
        entity, relation = set(), []
        for position, word in enumerate(tokens):
            term = fold(word)
            if word.lower() in STOPWORDS or term in STOPWORDS:
                continue
            if word[:1].isupper() or word[:1].isdigit():
                if position or word.lower() not in _QUESTION_WORDS:
                    entity.add(term)
            elif term not in DESCRIBED and word not in _PARTICLES and len(term) > 1:
                relation.append(term)
        self.entity = frozenset(entity)
        self.relation = frozenset(relation_key(t) for t in relation)
        self.relation_words = tuple(dict.fromkeys(relation))
        # a text word can share a relation key only if it starts like a relation word or one of its irregular
        # forms: the others are never stemmed (stemming every word of every passage costs more than scoring)
        family = {form for form, canon in IRREGULAR.items() if canon in self.relation}
        self._prefixes = frozenset(w[:3] for w in (*relation, *family))
        self._starts_like = _starting_with(self._prefixes)
        self.names = tuple(_names(question))
        self._name_words = [_POSSESSIVE.sub("", " ".join(run)) for run in _name_runs(question)]
        self.distinguishing = distinguishing_terms(tokens)
        self._held = {term: re.compile(rf"(?<![\w'’]){re.escape(term)}(?:['’]s|s|es)?(?![\w'’])")
                      for term in self.distinguishing}

    @property
    def variants(self) -> Callable[[Iterable[str]], dict[str, str]] | None:
        """`keys`, for a question with a relation; None for one without (every word is its own key)."""
        return self.keys if self._prefixes else None

    def keys(self, terms: Iterable[str]) -> dict[str, str]:
        """`relation_key` of each of `terms` that may share a key with the question's relation (one that starts like
        a relation word or one of its irregular forms, picked in C); every other term is its own key."""
        return {term: relation_key(term) for term in self._starts_like(terms)} if self._prefixes else {}

    @property
    def checks(self) -> bool:
        """Whether there is anything to read for beyond the words (a relation, a kind, a name, a term)."""
        return bool(self.relation or self.kind or self.names or self.distinguishing)

    def assess(self, text: str) -> Assessment:
        """What `text` states of the question's relation and answer, and whether it names the entity, read
        in its first `READ_CHARS` characters (a 4 MB passage is read as far as any prompt would carry it)."""
        text = text[:READ_CHARS]
        support, best_has_form = (1.0, True) if not (self.relation or self.kind) else self._support(text)
        has_form = best_has_form or self.kind is None or self._has_form(text)
        full = not self.names or self._named_in_full(text)
        lowered = text.lower()
        missing = tuple(term for term, held in self._held.items() if not held.search(lowered))
        notes = []
        if missing:
            notes.append(("term", "does not hold '" + "', '".join(missing) + "'"))
        if not has_form:
            notes.append(("form", f"holds no {self.kind}"))
        if not full:
            name = self._name_words[0] if self._name_words else " ".join(self.names[0])
            notes.append(("name", f"does not name '{name}' in full"))
        if support < 1.0 and self.relation:
            asked = "', '".join(self.relation_words)
            notes.append(("relation", f"states {'none' if support == 0.0 else 'part'} of '{asked}' in one sentence"))
        return Assessment(support, full, has_form, missing, tuple(notes))

    def _support(self, text: str) -> tuple[float, bool]:
        best, best_form = 0.0, False
        for start, end in sentence_spans("en", text) or [(0, len(text))]:
            sentence = text[start:end]
            share = self._share(sentence) if self.relation else 1.0
            if share <= best:  # not better even with an answer of the asked kind
                continue
            form = self._has_form(sentence)
            value = share * (1.0 if form else 0.5)
            if value > best:
                best, best_form = value, form
                if best == 1.0:
                    break
        return best, best_form

    def _named_in_full(self, text: str) -> bool:
        """Whether `text` names one of the question's names in full (`_names_in_full`). Its name runs are found
        only if it can hold a name's last word: an ASCII text without that word's letters cannot."""
        lowered = text.lower() if text.isascii() else None
        names = [name for name in self.names if lowered is None or _letters_of(name[1]) in lowered]
        runs = _run_texts(text) if names else []
        return any(_names_in_full(name, runs) for name in names)

    def _share(self, sentence: str) -> float:
        """The share of the relation's keys that the words of `sentence` hold."""
        terms = set(map(fold, words(sentence)))
        keyed = self.keys(terms)
        held = self.relation.intersection(keyed.values()).union(self.relation.intersection(terms).difference(keyed))
        return len(held) / len(self.relation)

    def _has_form(self, sentence: str) -> bool:
        kind, own = self.kind, self.question_terms
        if kind is None:
            return True
        if kind == "time":
            return bool(_TIME.search(sentence))
        if kind == "number":
            return any(fold(m.group(1)) not in own for m in _NUMBER.finditer(sentence))
        if kind == "place":
            return any(fold(m.group(1)) not in own for m in _PLACE.finditer(sentence))
        if kind == "person":
            return any(m.start() > 0 and fold(m.group()) not in own and fold(m.group()) not in STOPWORDS
                       and not _TIME.fullmatch(m.group()) for m in _CAPITALISED.finditer(sentence))
        return bool(_DESCRIPTION.search(sentence))


def distinguishing_terms(tokens: Iterable[str]) -> tuple[str, ...]:
    """The terms of a question's words that say which thing it is about, lower-cased: words with a digit (a
    model number, version, year, amount: "DS-650" gives "650") and capitalised words that are not its opening
    question word nor function words (a plan, a product, a person: "Team", "Enterprise", "Napoleon"). A passage
    without one of them is about another thing of the same kind."""
    found: dict[str, None] = {}
    for position, word in enumerate(tokens):
        lowered = word.lower()
        if lowered in STOPWORDS or fold(word) in STOPWORDS or lowered.split("'")[0].split("’")[0] == "i":
            continue
        if any(c.isdigit() for c in word) or (word[:1].isupper() and (position or lowered not in _QUESTION_WORDS)):
            found[_POSSESSIVE.sub("", lowered)] = None  # "Feilden's" is held by "Feilden" (and "Feilden's")
    return tuple(found)


def _name_runs(text: str) -> list[list[str]]:
    """Runs of two or more capitalised words as written (particles such as "van", initials and quoted nicknames
    inside); any other punctuation between two words ends a run ("John Finlay (April 22, 1837)"). Found by one
    regular expression (`_run_patterns`), so a passage costs a pass in C, not a Python step per word."""
    return [_WORD.findall(run) for run in _run_texts(text)]


def _run_texts(text: str) -> list[str]:
    """The name runs of `text` as written, each one string (`_name_runs` without splitting them into words)."""
    basic, every = _run_patterns()
    return (basic if text.isascii() or not _ASTRAL.search(text) else every).findall(text)


_POSSESSIVE = re.compile(r"['’]s$")
_WORD = re.compile(r"[\w'’]+")  # a word as a name run holds it: a period may follow (an initial, "Jr.")
_ASTRAL = re.compile("[\U00010000-\U0010FFFF]")


@lru_cache(maxsize=1)
def _run_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
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


def _names(question: str) -> list[tuple[str, str]]:
    """(first, last) of each name of two or more capitalised words in the question, folded (particles,
    suffixes and question words dropped)."""
    found = []
    for run in _name_runs(question):
        kept = [fold(w) for w in run if fold(w) not in _SUFFIXES and w not in _PARTICLES
                and w.lower() not in STOPWORDS]
        if len(kept) >= 2:
            found.append((kept[0], kept[-1]))
    return found


def _names_in_full(name: tuple[str, str], runs: list[str]) -> bool:
    """Whether a text's name runs (`_run_texts`) name (first, last) in full: a run with the first word (or its
    initial) and, later, the last, followed by nothing but a suffix or an abbreviation ("QC", "MP"), not by
    another name. One pass over each run's words, and none over a run in ASCII without the last word's
    letters (`_letters_of`)."""
    first, last = name
    core = _letters_of(last)
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


def _letters_of(last: str) -> str:
    """What an ASCII word that folds to `last` holds, lower-cased: `last` ("Smiths", "Smith's"), or for a last
    word in "y" all but the "y" ("Kennedies" holds "kenned")."""
    return last[:-1] if last.endswith("y") else last
