"""The one rule for an Ambiguous question's internal strips: which are kept, which are marked unverified, and
which are dropped when the web gives no knowledge. The core's walk applies it to its strips; the Haystack
router stamps it on documents for the `KnowledgeGate`, which applies it to the same scores."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import ClassVar, Literal

from ..text.follow_up import follow_up_pronoun
from ..trace import AmbiguousStrips, Trace
from ..types import Strip

Placement = Literal["kept", "unverified", "dropped"]
Below = Literal["drop", "keep", "guard"]


def below_floor(on_web_failure: str, ambiguous: str) -> Below:
    """What an Ambiguous question's strips below the floor do under these settings (`AmbiguousRule.below`)."""
    return "guard" if ambiguous == "guard" else "keep" if on_web_failure == "keep" else "drop"


@dataclass(frozen=True)
class AmbiguousRule:
    """What becomes of an Ambiguous question's internal strips, the one rule the core's walk and the Haystack
    `KnowledgeGate` apply to the strips' scores (the router stamps it on the documents, `stamp()`), so
    `build_crag_pipeline` hands the generator what `Corrector.correct` does.

    A strip scoring at least `floor` (`ambiguous_floor`: the upper threshold, as Correct would, or above
    every score for a question that names no one) is kept.
    One below it is, by `below`: "drop", dropped unless web knowledge arrived (a web strip was kept);
    "keep", kept (`on_web_failure="keep"`); "guard", kept and marked unverified (`ambiguous="guard"`), web
    knowledge or not."""

    floor: float
    below: Below

    #: the document meta keys `stamp()` writes and `read()` reads
    FLOOR_KEY: ClassVar[str] = "crag_keep_at"
    BELOW_KEY: ClassVar[str] = "crag_below_floor"

    def place(self, scores: Sequence[float], web_knowledge: bool) -> list[Placement]:
        """Each strip, by its score: "kept", "unverified" (kept, marked) or "dropped"."""
        below: Placement = ("unverified" if self.below == "guard"
                            else "dropped" if self.below == "drop" and not web_knowledge else "kept")
        return ["kept" if score >= self.floor else below for score in scores]

    def apply(self, strips: list[Strip], web_knowledge: bool, trace: Trace) -> list[Strip]:
        """The strips the rule keeps, those under guard marked `unverified`; the trace says what it did."""
        placed = self.place([s.score for s in strips], web_knowledge)
        trace.add(AmbiguousStrips(self.floor, self.below, web_knowledge, placed.count("kept"),
                                  placed.count("unverified"), placed.count("dropped")))
        return [replace(s, unverified=True) if p == "unverified" else s
                for s, p in zip(strips, placed) if p != "dropped"]

    def without_web(self) -> str:
        """What the rule does when the web gives no knowledge, in words (the trace's fallback says it)."""
        floor = f" ({self.floor:+.2f})" if self.floor <= 1.0 else ""
        if self.below == "guard":
            return (f"kept the internal strips that pass the strip threshold, those below the upper threshold"
                    f"{floor} marked unverified; the web half is missing")
        if self.below == "keep":
            return "kept the internal strips that pass the strip threshold; the web half is missing"
        return (f"kept only the internal strips scoring at least the upper threshold{floor}, as Correct would; "
                "the web half is missing")

    def stamp(self) -> dict[str, float | str]:
        """The rule as document meta, for a component that applies it later (the Haystack gate)."""
        return {self.FLOOR_KEY: self.floor, self.BELOW_KEY: self.below}

    @classmethod
    def read(cls, meta: Mapping[str, object]) -> AmbiguousRule | None:
        """The rule `stamp()` wrote into `meta`, or None when there is none."""
        if cls.FLOOR_KEY not in meta:
            return None
        floor, below = meta[cls.FLOOR_KEY], meta.get(cls.BELOW_KEY, "drop")
        if not isinstance(floor, (int, float)) or isinstance(floor, bool):
            raise ValueError(f"meta[{cls.FLOOR_KEY!r}] must be a number, got {floor!r}")
        if below == "drop" or below == "keep" or below == "guard":
            return cls(float(floor), below)
        raise ValueError(f"meta[{cls.BELOW_KEY!r}] must be 'drop', 'keep' or 'guard', got {below!r}")


#: The floor above every score: nothing an under-specified question retrieved is kept without the web.
ABOVE_EVERY_SCORE = 2.0


def ambiguous_floor(query: str, upper: float, language: str = "en") -> float:
    """What an Ambiguous query's internal strips must score to count as verified (`AmbiguousRule.floor`):
    the upper threshold (as Correct would), or, for a question that names no one but a pronoun in `language`
    (a code: `Corrector.question_language`; see `crag_shared.text.follow_up`), `ABOVE_EVERY_SCORE`."""
    return ABOVE_EVERY_SCORE if follow_up_pronoun(query, language) else upper


def ambiguous_rule(query: str, upper: float, on_web_failure: str, ambiguous: str, language: str = "en"
                   ) -> AmbiguousRule:
    """The `AmbiguousRule` of one Ambiguous question under a corrector's settings: its floor is
    `ambiguous_floor`. The core's walk and the Haystack router (which stamps it for the gate) take it here."""
    return AmbiguousRule(ambiguous_floor(query, upper, language), below_floor(on_web_failure, ambiguous))
