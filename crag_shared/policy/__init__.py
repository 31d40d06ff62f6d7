"""The action policy, in one room: how passage scores become Correct, Incorrect or Ambiguous, and what an
Ambiguous question does with its own strips.

- `thresholds`: the action trigger (paper section 4.3), `ActionPolicy` (upper, lower), and the thresholds file
  `crag calibrate` writes (`ThresholdsFile`).
- `ambiguous`: the one rule for an Ambiguous question's internal strips (`AmbiguousRule`): kept, marked
  unverified or dropped, and the floor they must reach (`ambiguous_floor`).

The core's walk (`crag_shared.corrector.walk`) applies both; the Haystack router stamps the Ambiguous rule on
documents for its gate. Where the thresholds come from: each judge carries its own (`RetrievalEvaluator.thresholds`),
`crag calibrate` fits them (`crag_shared.calibration`).
"""

from .ambiguous import ABOVE_EVERY_SCORE, AmbiguousRule, ambiguous_floor, ambiguous_rule, below_floor
from .thresholds import ActionPolicy, Thresholded, ThresholdsFile

__all__ = ["ABOVE_EVERY_SCORE", "ActionPolicy", "AmbiguousRule", "Thresholded", "ThresholdsFile", "ambiguous_floor",
           "ambiguous_rule", "below_floor"]
