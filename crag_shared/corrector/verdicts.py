"""What a verdict says beyond the action: who decided (the LLM judge, its offline partner), how the strips of a
passage the LLM accepted keep that acceptance, and why there is no knowledge, in words naming the passage that
came closest."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..evaluators.base import LLM_JUDGE
from ..refine import Piece
from ..summary import one_line
from ..types import Abstention, Action, Passage
from .protocol import ScoringState


def decided_by(evaluator: str, judges: Sequence[str], llm_calls: int) -> str:
    """Who judged the passages, in words: the evaluator's spec; for the LLM judge "llm" when it judged them all,
    else its offline partner and why ("the LLM was not asked", "no verdict from the LLM") or for how many."""
    if not judges:
        return evaluator
    by_llm = sum(1 for j in judges if j == LLM_JUDGE)
    offline = next((j for j in judges if j != LLM_JUDGE), "")
    if by_llm == len(judges):
        return LLM_JUDGE
    if by_llm:
        return f"{LLM_JUDGE}; {offline} for {len(judges) - by_llm} of {len(judges)} passages (no verdict from the LLM)"
    why = "the LLM was not asked: every passage far below the lower threshold" if not llm_calls else (
        "no verdict from the LLM")
    return f"{offline} ({why})"


def accepted_by_llm(state: ScoringState, keys: Mapping[int, str]) -> set[int]:
    """The passages (by index; `keys` their scored texts, whitespace collapsed) the LLM judge accepted: judged by
    the LLM itself and scoring at least the upper threshold."""
    return {index for index, key in keys.items()
            if state.judges.get(key) == LLM_JUDGE and state.cache.get(key, -1.0) >= state.policy.upper}


def seed_verdicts(state: ScoringState, keys: Sequence[str], judged: Sequence[tuple[float, str] | None]) -> None:
    """Passages judged earlier (`Corrector.refine(judged=...)`): their (score, judge) by their scored texts' keys."""
    for key, verdict in zip(keys, judged):
        if verdict is not None:
            state.cache[key], state.judges[key] = verdict


def within_verdicts(pieces: Sequence[Piece], scores: Sequence[float], accepted: set[int], floor: float
                    ) -> list[float]:
    """The strips of an accepted passage scored in [floor, 1] (`floor`: the upper threshold, or the strip threshold
    if higher), ranked within it by the strip judge's score: they pass the strip threshold, and every strip of a
    passage the LLM did not accept ranks below them. Other strips keep their scores."""
    return [floor + (1.0 - floor) * (score + 1.0) / 2.0 if piece.source_index in accepted else score
            for piece, score in zip(pieces, scores)]


def abstention_for(action: Action, web_missing: str | None, upper: float | None = None, closest: str = ""
                   ) -> Abstention:
    """Why a correction of this action ended with no knowledge (see `Abstention`); `web_missing` says why
    there is no web knowledge, None when the web gave pages but none of their strips passed; `upper`, the
    floor an Ambiguous query's internal strips had to reach without web knowledge (`AmbiguousRule`, "drop");
    `closest`, the passage that came closest and what it lacks (`closest_passage`), added after a semicolon.
    The Haystack pipeline's `KnowledgeGate` words its abstentions with this too."""
    if action is Action.UNJUDGED:
        return Abstention("empty_query", "the query is empty: nothing was judged")
    abstention = _abstention(action, web_missing, upper)
    return Abstention(abstention.code, f"{abstention.reason}; {closest}") if closest else abstention


def _abstention(action: Action, web_missing: str | None, upper: float | None) -> Abstention:
    web = f"there is no web knowledge ({web_missing})" if web_missing else "no web strip passed the strip threshold"
    if action is Action.INCORRECT:
        return Abstention("incorrect", f"the retrieved passages were judged irrelevant and {web}")
    internal = "no retrieved strip passed the strip threshold"
    if upper is not None and action is Action.AMBIGUOUS:
        internal = ("the question names no one, so no retrieved strip can be judged against it" if upper > 1.0
                    else f"no retrieved strip scored at least the upper threshold ({upper:+.2f})")
    return Abstention("no_knowledge", internal if action is Action.CORRECT else f"{internal} and {web}")


def closest_passage(passages: Sequence[Passage], scores: Sequence[float], reasons: Sequence[str]) -> str:
    """The passage that came closest, in words a reader follows: its title (else its place among the retrieved
    passages: this text reaches the LLM too, and no rejected passage's words may), its score, and the judge's
    reason for lowering it ("" when no passage had text)."""
    judged = [(score, i) for i, score in enumerate(scores) if i < len(passages) and (passages[i].text or "").strip()]
    if not judged:
        return ""
    score, i = max(judged, key=lambda found: (found[0], -found[1]))  # the first of equals
    passage = passages[i]
    name = f"“{one_line(passage.title, 80)}”" if passage.title else f"passage {i + 1} of {len(passages)}"
    why = one_line(reasons[i], 200) if i < len(reasons) and reasons[i] else ""
    return f"the closest passage, {name}, scored {score:+.2f}" + (f" ({why})" if why else "")
