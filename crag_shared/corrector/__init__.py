"""The corrector: Algorithm 1 walked once (`walk.py`), driven by `Corrector` sync, async and in batches."""

from .ambiguous import AmbiguousRule
from .corrector import Corrector
from .verdicts import abstention_for
from .walk import NO_WEB_SEARCH, ambiguous_rule

__all__ = ["NO_WEB_SEARCH", "AmbiguousRule", "Corrector", "abstention_for", "ambiguous_rule"]
