"""The action trigger (paper section 4.3): two thresholds turn passage scores into one action; the thresholds
file that carries them."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from ..files import read_settings_text
from ..scores import Threshold
from ..summary import first_error
from ..types import Action


class Thresholded(Protocol):
    """Anything that carries its own (upper, lower) thresholds: every retrieval evaluator."""

    @property
    def thresholds(self) -> tuple[float, float]:
        """(upper, lower)."""
        ...


class ThresholdsFile(BaseModel):
    """A thresholds file (`crag calibrate`, `ActionPolicy.save`, read by `thresholds_path=`): `upper` and `lower`,
    and whatever the calibration recorded beside them (its method, Eq. 2, the trade-off table...)."""

    model_config = ConfigDict(extra="allow")
    upper: Threshold
    lower: Threshold


@dataclass(frozen=True)
class ActionPolicy:
    """Correct if any score ≥ upper; Incorrect if every score < lower (or there are none); else Ambiguous.

    Thresholds are signed values in [-1, 1], used as given: unlike the official script, a lower threshold
    of 0.9 means +0.9, not -0.9.
    """

    upper: float
    lower: float

    def __post_init__(self) -> None:
        for name in ("upper", "lower"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value):
                raise ValueError(f"{name} threshold must be a number, got {value!r}")
            if not -1.0 <= value <= 1.0:
                raise ValueError(f"{name} threshold must lie in [-1, 1], got {value}")
        if self.upper < self.lower:
            raise ValueError(f"upper threshold ({self.upper}) must not be below lower threshold ({self.lower})")

    @classmethod
    def for_evaluator(cls, evaluator: Thresholded) -> "ActionPolicy":
        """The evaluator's own thresholds as a policy."""
        upper, lower = evaluator.thresholds
        return cls(upper, lower)

    def decide(self, scores: Sequence[float]) -> Action:
        """The action for a query's passage scores (Incorrect when there are none)."""
        if not scores:  # nothing was retrieved: only the web can help
            return Action.INCORRECT
        if any(s >= self.upper for s in scores):
            return Action.CORRECT
        if all(s < self.lower for s in scores):
            return Action.INCORRECT
        return Action.AMBIGUOUS

    def to_dict(self) -> dict[str, float]:
        """This object as JSON-ready values."""
        return {"upper": self.upper, "lower": self.lower}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ActionPolicy":
        """Rebuild from `to_dict`'s output (or a thresholds file's content, `ThresholdsFile`); a malformed dict
        raises ValueError naming what is wrong."""
        try:
            found = ThresholdsFile.model_validate(data)
        except ValidationError as error:
            raise ValueError(first_error(error)) from None
        return cls(found.upper, found.lower)

    def save(self, path: str | Path) -> None:
        """Write the thresholds as JSON (readable by `load` and `thresholds_path`)."""
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> "ActionPolicy":
        """Read thresholds JSON as written by `save` or by `crag calibrate`; a bad file names itself."""
        try:
            return cls.from_dict(json.loads(read_settings_text(path, "thresholds_path")))
        except (ValueError, RecursionError) as error:  # JSONDecodeError is a ValueError
            raise ValueError(f"{path}: not a thresholds file ({type(error).__name__}: {error})"[:300]) from None
