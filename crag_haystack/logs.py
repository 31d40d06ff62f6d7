"""What every crag component logs on Haystack's logger: fallbacks taken, and queries it cannot judge."""

from collections.abc import Iterable
from typing import Any

from haystack import logging

from crag_shared.types import Fallback

logger = logging.getLogger("crag_haystack")


def log_fallbacks(component: str, fallbacks: Iterable[Fallback]) -> None:
    for fallback in fallbacks:
        logger.warning(f"{component}: CRAG fallback in {fallback.step}: {fallback.reason} -> {fallback.applied}")


def unusable_query(component: str, query: Any) -> bool:
    """True (with a warning) for an empty or whitespace query: like Haystack's rankers, the component then
    returns its documents unchanged instead of raising out of the pipeline."""
    if isinstance(query, str) and query.strip():
        return False
    logger.warning(f"{component}: empty query; returning the documents unchanged")
    return True
