"""The corrector: Algorithm 1 walked once (`walk.py`), driven by `Corrector` sync, async and in batches."""

from .corrector import Corrector
from .verdicts import abstention_for
from .walk import NO_WEB_SEARCH

__all__ = ["NO_WEB_SEARCH", "Corrector", "abstention_for"]
