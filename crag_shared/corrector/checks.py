"""Where plug-ins and callers meet the walk: their inputs and outputs checked, with errors that name them.

Wrong types and shapes are programming errors (raised, naming the argument or the plug-in); a runtime
fault (a NaN or infinite score) becomes a `Failed` step and takes the documented fallback.
"""

from __future__ import annotations

import logging
import math
import numbers
from collections.abc import Iterable

from ..evaluators.base import Evaluation, RetrievalEvaluator
from ..evaluators.spec import describe
from ..scores import clip
from ..trace import log
from ..types import Passage, Trace, WebResult, WebSearchResponse
from ..web.base import WebSearch
from .protocol import Failed


def checked_scores(evaluator: RetrievalEvaluator, answer: object, expected: int, trace: Trace
                    ) -> Evaluation | Failed:
    """An evaluator's output where it enters the walk.

    Wrong shapes and types are the plug-in's bug: a clear error naming it. A NaN or infinite score is a
    runtime fault (a model that overflowed): the evaluator counts as failed, so the fallback evaluator
    scores, recorded and logged. Finite scores outside [-1, 1] are clipped, and the clipping is recorded
    as a fallback."""
    name = describe(evaluator)
    if not isinstance(answer, Evaluation):
        raise TypeError(f"evaluator {name} returned {type(answer).__name__} from evaluate(); expected an Evaluation")
    scores = answer.scores
    if not isinstance(scores, (list, tuple)) or len(scores) != expected:
        got = f"{len(scores)} scores" if isinstance(scores, (list, tuple)) else type(scores).__name__
        raise ValueError(f"evaluator {name} returned {got} for {expected} texts; expected one score per text")
    for i, score in enumerate(scores):
        if isinstance(score, bool) or not isinstance(score, numbers.Real):
            raise TypeError(f"evaluator {name} returned a {type(score).__name__} score at {i}; expected a number")
    broken = [float(score) for score in scores if not math.isfinite(score)]
    if broken:
        return Failed(ValueError(f"{len(broken)} of {expected} scores were not finite numbers "
                                 f"(e.g. {broken[0]:g}): a model that overflowed"))
    outside = [float(score) for score in scores if not -1.0 <= score <= 1.0]
    if outside:
        trace.fallback("evaluate", f"{name} returned {len(outside)} score(s) outside [-1, 1] "
                       f"(e.g. {outside[0]:g})", "clipped them to [-1, 1]")
    reasons = answer.reasons
    if reasons and (not isinstance(reasons, (list, tuple)) or len(reasons) != expected
                    or not all(isinstance(r, str) for r in reasons)):
        raise ValueError(f"evaluator {name} returned reasons that are not one string per text ({expected} texts)")
    judges = answer.judges
    if judges and (not isinstance(judges, (list, tuple)) or len(judges) != expected
                   or not all(isinstance(j, str) for j in judges)):
        raise ValueError(f"evaluator {name} returned judges that are not one string per text ({expected} texts)")
    return Evaluation([clip(score) for score in scores], list(answer.notes), list(reasons), list(judges),
                      list(answer.faults), answer.llm_calls)


def checked_response(provider: WebSearch, response: object) -> WebSearchResponse:
    """A web provider's answer where it enters the walk: anything but a WebSearchResponse of WebResults
    is the provider's bug, said clearly (a failing search raises instead, and takes the fallback)."""
    name = type(provider).__name__
    if not isinstance(response, WebSearchResponse):
        raise TypeError(f"web search provider {name} returned {type(response).__name__}; "
                        "expected a WebSearchResponse (raise WebSearchError when a search fails)")
    if not isinstance(response.results, list) or not all(isinstance(r, WebResult) for r in response.results):
        raise TypeError(f"web search provider {name} returned results that are not a list of WebResult")
    return response


def query_text(query: object) -> str:
    """The query as judged: stripped; "" (an empty or whitespace query) is judged as UNJUDGED. Anything but
    a string is the caller's bug."""
    if not isinstance(query, str):
        raise TypeError(f"query must be a string, got {type(query).__name__}")
    return query.strip()


def check_query(query: object) -> str:
    """A question to search or refine against: a non-empty string (ValueError or TypeError otherwise)."""
    text = query_text(query)
    if not text:
        raise ValueError("query must be a non-empty string (got an empty or whitespace-only query)")
    return text


#: Above this many passages in one request, CRAG warns: it scores each (10,000 took minutes on two cores).
MANY_PASSAGES = 1_000


def as_passages(passages: object) -> list[Passage]:
    """The passages as `Passage`s with ids (their index when missing); anything else is a TypeError naming it."""
    if not isinstance(passages, Iterable) or isinstance(passages, (str, bytes)):
        raise TypeError("passages must be a list of strings or Passage objects")
    items = []
    for i, p in enumerate(passages):
        if isinstance(p, Passage):
            for name in ("text", "title", "url"):
                value = getattr(p, name)
                if value is not None and not isinstance(value, str):
                    raise TypeError(f"passages[{i}].{name} is {type(value).__name__}; expected str or None")
            items.append(p if p.id is not None else Passage(p.text, str(i), p.title, p.url, p.score, p.metadata))
        elif isinstance(p, str) or p is None:
            items.append(Passage(p, id=str(i)))
        else:
            raise TypeError(f"passages[{i}] is {type(p).__name__}; expected str or Passage")
    if len(items) > MANY_PASSAGES:
        log(logging.WARNING, "CRAG judges every passage it is given: {count} in one request will take long (each "
            "is scored, then refined); hand it the top of your retrieval (the paper judges 10)", count=len(items))
    return items
