"""What crag's components report to Haystack: log records on Haystack's logger (structured, one per event)
and tracing spans for the core's steps."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from haystack import logging
from haystack.tracing import Span, tracer

from crag_shared.adapter import logging_to

#: Under `haystack_integrations`, which Haystack's logging configuration formats (3.x) as it does its own.
logger = logging.getLogger("haystack_integrations.crag")


def _to_haystack(level: int, template: str, fields: dict[str, Any]) -> None:
    """The core's log records, as Haystack logs: the template interpolated from keyword fields."""
    logger.log(level, template, **fields)


@contextmanager
def observed(operation: str, component: str, query: str) -> Iterator[Span]:
    """A Haystack tracing span `crag.<operation>` (judge, search, refine, correct) around one core call,
    the query as a content tag (kept only with Haystack's content tracing on); inside it, the core's log
    records go to Haystack's logger, once each, instead of the "crag" logger. Yields the span, for the
    caller's result tags (action, scores...)."""
    with tracer.trace(f"crag.{operation}", tags={"crag.component": component}) as span, logging_to(_to_haystack):
        span.set_content_tag("crag.query", query)
        yield span


def checked_query(component: str, query: object) -> str:
    """The query a component judges: anything but a string is the caller's bug, raised naming `query`; an
    empty one is the core's unjudged outcome (never labelled correct)."""
    if not isinstance(query, str):
        raise TypeError(f"{component}: query must be a string, got {type(query).__name__}")
    return query


def unusable_query(component: str, query: object) -> bool:
    """True (with a warning) for an empty or whitespace query: like Haystack's rankers, a refiner or a web
    search then returns its documents unchanged instead of raising out of the pipeline. A query that is
    not a string raises."""
    if checked_query(component, query).strip():
        return False
    logger.warning("{component}: empty query; returning the documents unchanged", component=component)
    return True
