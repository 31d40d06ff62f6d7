"""Where the passages' judge and the strips' judge differ (the LLM judge and its offline partner): who decided,
and how the strips of a passage the LLM accepted keep that acceptance."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..evaluators.base import LLM_JUDGE
from ..refine import Piece
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
