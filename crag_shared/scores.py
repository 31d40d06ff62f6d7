"""The one clamp of a score: a value that is not a finite number never becomes a bound."""

from __future__ import annotations

import math

__all__ = ["clip"]


def clip(value: float, low: float = -1.0, high: float = 1.0) -> float:
    """`value` clipped to [low, high] (a score: [-1, 1]); NaN and ±inf give NaN, never a bound.

    `max(-1, min(1, nan))` is +1.0, the best score: a model that overflowed would make a passage
    Correct. A value that is not a finite number is no score, and the Corrector treats it as a runtime
    fault of its evaluator (`checked_scores`): the fallback evaluator scores, recorded and logged."""
    value = float(value)
    return min(high, max(low, value)) if math.isfinite(value) else math.nan
