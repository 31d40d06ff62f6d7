"""`crag_shared.notebook` is `crag_shared.summary` since 0.3.0: `verdict_html`, `Verdict` and `COLOURS` still
import from here, with a `DeprecationWarning`, until 0.4.0 removes this module."""

from __future__ import annotations

import warnings

from . import summary

_MOVED = ("COLOURS", "Verdict", "verdict_html")


def __getattr__(name: str) -> object:
    """A name that moved to `crag_shared.summary`, with the warning that says so."""
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(f"crag_shared.notebook.{name} is deprecated since 0.3.0 and is removed in 0.4.0: use "
                  f"crag_shared.summary.{name}", DeprecationWarning, stacklevel=2)
    return getattr(summary, name)
