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

Each check that fails is a short reason (`Assessment.notes`) that the trace carries. The English words it
reads by (irregular forms, answer kinds, months, number words, name particles...) are the tables in
`tables/en/`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, cast, get_args

from .knowledge import table_keys, table_lines, table_words, word_set
from .names import POSSESSIVE, letters_of, name_runs, names_in_full, names_of, run_patterns, run_texts
from .sentences import READ_CHARS
from .unanswering import addresses_the_judge, only_asks, statements
from .words import STOPWORDS, fold, words

__all__ = ["Assessment", "Kind", "Reading", "answer_kind", "relation_key"]

#: The kind of answer a question's wording asks for.
Kind = Literal["place", "time", "person", "number", "description"]

#: A relation word's form -> the key all its forms share (`tables/en/irregular_forms.txt`).
IRREGULAR = {form: canon for canon, forms in table_keys("en", "irregular_forms") for form in forms.split()}
#: Attributes a description answers ("X was an English poet"): the word itself is rarely in the passage.
DESCRIBED = word_set("en", "described")
_QUESTION_WORDS = word_set("en", "question_words")
_AGENT_SUFFIXES = table_words("en", "agent_suffixes")
_PARTICLES = word_set("en", "name_particles")


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
        if kind not in get_args(Kind):
            raise ValueError(f"tables/en/answer_kinds.txt: unknown answer kind {kind!r}, not one of {get_args(Kind)}")
        openings.setdefault(cast(Kind, kind), []).append(pattern)
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
    - `cannot_answer`: it cannot state the answer, whatever words it shares: it only asks the question (every
      sentence holding the question's words is a question), addresses the judge ("score this passage +1"),
      or states the relation with an answer of the asked kind only of another named person;
    - `notes`: each piece of evidence in words, by its kind ("term", "form", "name", "relation"), for the
      trace."""

    support: float
    full_name: bool
    has_form: bool = True
    missing: tuple[str, ...] = ()
    notes: tuple[tuple[str, str], ...] = ()
    cannot_answer: bool = False


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
        self.relation_terms = frozenset(relation)
        # a text word can share a relation key only if it starts like a relation word or one of its irregular
        # forms: the others are never stemmed (stemming every word of every passage costs more than scoring)
        family = {form for form, canon in IRREGULAR.items() if canon in self.relation}
        self._prefixes = frozenset(w[:3] for w in (*relation, *family))
        self._starts_like = _starting_with(self._prefixes)
        self.names = tuple(names_of(question))
        self._name_words = [POSSESSIVE.sub("", " ".join(run)) for run in name_runs(question)]
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
        has_form = best_has_form or self.kind is None or any(self._has_form(text[a:b])
                                                             for a, b in self._own_statements(text))
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
        cannot = self._cannot_answer(text, has_form)
        if cannot:
            notes.append(("cannot", cannot))
        return Assessment(support, full, has_form, missing, tuple(notes), bool(cannot))

    def _cannot_answer(self, text: str, has_form: bool) -> str:
        """Why `text` cannot state the answer ("" when it may): it only asks, it addresses the judge, or what it
        states of the relation it states of someone else."""
        if only_asks(self.entity | self.relation_terms, text) and not (has_form and self.kind):
            return "only asks the question, states nothing"
        if addresses_the_judge(text):
            return "addresses the judge instead of stating anything"
        if not has_form and self.entity and self.relation and self.kind and any(
                self._of_someone_else(text[a:b]) and self._share(text[a:b]) and self._has_form(text[a:b])
                for a, b in statements(text)):
            return f"states '{', '.join(self.relation_words)}' of someone else"
        return ""

    def _support(self, text: str) -> tuple[float, bool]:
        """The best statement's share of the relation, halved without an answer of the asked kind there. A
        question ("Where was John Smith born?") states nothing; nor does a sentence that says it of someone else
        ("His rival Peter Jones was born in Paris."): subject, relation and answer are read together."""
        best, best_form = 0.0, False
        for start, end in self._own_statements(text):
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

    def _own_statements(self, text: str) -> list[tuple[int, int]]:
        """The statements of `text` (`statements`) that may be about the question's entity: not one that names
        another person before its relation and never the entity."""
        found = statements(text)
        return [(a, b) for a, b in found if not (self.entity and self.relation and self._of_someone_else(text[a:b]))]

    def _of_someone_else(self, sentence: str) -> bool:
        """Whether `sentence` names another person before its relation and never the question's entity: then
        what it states is that person's."""
        if self.entity.intersection(map(fold, words(sentence))):
            return False
        first = min((m.start() for m in re.finditer(r"[\w'’]+", sentence) if relation_key(fold(m.group())) in
                     self.relation), default=len(sentence))
        basic, _ = run_patterns()
        return any(m.start() < first and len(names_of(m.group())) for m in basic.finditer(sentence))

    def _named_in_full(self, text: str) -> bool:
        """Whether `text` names one of the question's names in full (`names_in_full`). Its name runs are found
        only if it can hold a name's last word: an ASCII text without that word's letters cannot."""
        lowered = text.lower() if text.isascii() else None
        names = [name for name in self.names if lowered is None or letters_of(name[1]) in lowered]
        runs = run_texts(text) if names else []
        return any(names_in_full(name, runs) for name in names)

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
            found[POSSESSIVE.sub("", lowered)] = None  # "Feilden's" is held by "Feilden" (and "Feilden's")
    return tuple(found)
