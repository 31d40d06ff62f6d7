"""The one clamp of a score (a value that is not a finite number never becomes a bound), and what a threshold
is, as every file and setting that holds one declares it."""

from __future__ import annotations

import math
from typing import Annotated

from pydantic import Field

__all__ = ["Threshold", "clip"]

#: A threshold: a finite number in [-1, 1] (an integer is taken as the number it is; True is not a number here).
Threshold = Annotated[float, Field(ge=-1.0, le=1.0, allow_inf_nan=False, strict=True)]


def clip(value: float, low: float = -1.0, high: float = 1.0) -> float:
    """`value` clipped to [low, high] (a score: [-1, 1]); NaN and ±inf give NaN, never a bound.

    `max(-1, min(1, nan))` is +1.0, the best score: a model that overflowed would make a passage
    Correct. A value that is not a finite number is no score, and the Corrector treats it as a runtime
    fault of its evaluator (`checked_scores`): the fallback evaluator scores, recorded and logged."""
    value = float(value)
    return min(high, max(low, value)) if math.isfinite(value) else math.nan
