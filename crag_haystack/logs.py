"""What every crag component logs on Haystack's logger: fallbacks taken, and queries it cannot judge."""

from collections.abc import Iterable
from typing import Any

from haystack import logging

from crag_shared.adapter import Fallback

logger = logging.getLogger("crag_haystack")


def log_fallbacks(component: Any, fallbacks: Iterable[Fallback]) -> None:
    """Faults (a web search that failed, an evaluator that broke) as warnings, each time; an expected
    outcome of the setup (no web search configured) at INFO, once per component."""
    name = type(component).__name__
    for fallback in fallbacks:
        message = f"{name}: CRAG fallback in {fallback}"
        if not fallback.expected:
            logger.warning(message)
        elif not component._said_expected:
            component._said_expected = True
            logger.info(message + " (said once per component)")


def checked_query(component: str, query: Any) -> str:
    """The query a component judges: anything but a string is the caller's bug, raised naming `query`; an
    empty one is the core's unjudged outcome (never labelled correct)."""
    if not isinstance(query, str):
        raise TypeError(f"{component}: query must be a string, got {type(query).__name__}")
    return query


def unusable_query(component: str, query: Any) -> bool:
    """True (with a warning) for an empty or whitespace query: like Haystack's rankers, a refiner or a web
    search then returns its documents unchanged instead of raising out of the pipeline. A query that is
    not a string raises."""
    if checked_query(component, query).strip():
        return False
    logger.warning(f"{component}: empty query; returning the documents unchanged")
    return True
