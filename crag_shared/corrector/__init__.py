"""The corrector: Algorithm 1 walked once (`walk.py`), driven by `Corrector` sync, async and in batches."""

from .corrector import Corrector
from .walk import NO_WEB_SEARCH, abstention_for, ambiguous_floor

__all__ = ["NO_WEB_SEARCH", "Corrector", "abstention_for", "ambiguous_floor"]
