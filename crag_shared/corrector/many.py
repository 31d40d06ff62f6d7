"""Many queries at once: the walks advance together, one evaluator batch per step, searches concurrent.

`many_walks` is the loop both `Corrector.correct_many` and `acorrect_many` drive: it yields each step's
requests (by query index) and receives their answers, as a single walk does.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from concurrent.futures import Future
from typing import TypeVar

from ..evaluators.base import EvaluatorConfigurationError
from ..types import CorrectionResult, FailedCorrection
from .protocol import Answer, BothRequest, QueryFailed, Request, ScoreAnswer, ScoreRequest, Walk, WebAnswer, WebRequest

Outcome = CorrectionResult | FailedCorrection
T = TypeVar("T")


def many_walks(items: Sequence[tuple[str, object]], walks: list[Walk]
               ) -> Generator[dict[int, Request], dict[int, Answer], list[Outcome]]:
    """Advance every walk with its answer; yield the next requests until all are done. A walk that
    raises becomes a `FailedCorrection` in its place (only an `EvaluatorConfigurationError` escapes)."""
    results: list[Outcome | None] = [None] * len(items)
    answers: dict[int, Answer] = dict.fromkeys(range(len(items)))
    while answers:
        requests = advance(items, walks, answers, results)
        if not requests:
            break
        answers = yield requests
    return results  # type: ignore[return-value]


def result_of(future: Future[T]) -> T | QueryFailed:
    """A finished future's answer, or `QueryFailed` if the request raised."""
    try:
        return future.result()
    except Exception as error:  # a provider's bug fails its own query only
        return QueryFailed(error)


def web_requests(requests: dict[int, Request]) -> dict[int, WebRequest]:
    """The web half of each request that has one."""
    return {i: r.second if isinstance(r, BothRequest) else r for i, r in requests.items()
            if isinstance(r, (WebRequest, BothRequest))}


def score_requests(requests: dict[int, Request]) -> dict[int, ScoreRequest]:
    """The scoring half of each request that has one."""
    return {i: r.first if isinstance(r, BothRequest) else r for i, r in requests.items()
            if isinstance(r, (ScoreRequest, BothRequest))}


def answers_for(requests: dict[int, Request], scores: dict[int, ScoreAnswer],
                webs: dict[int, Answer]) -> dict[int, Answer]:
    """Each walk's answer to its request: a score answer, a web answer, or both."""
    answers: dict[int, Answer] = {}
    for i, request in requests.items():
        if isinstance(request, ScoreRequest):
            answers[i] = scores[i]
        elif isinstance(request, BothRequest):
            web = webs[i]
            answers[i] = web if isinstance(web, QueryFailed) or not isinstance(web, WebAnswer) else (scores[i], web)
        else:
            answers[i] = webs[i]
    return answers


def advance(items: Sequence[tuple[str, object]], walks: list[Walk], answers: dict[int, Answer],
            results: list[Outcome | None]) -> dict[int, Request]:
    """Send each live walk its answer; collect the next requests, the finished results and the failures."""
    requests: dict[int, Request] = {}
    for i, answer in answers.items():
        try:
            if isinstance(answer, QueryFailed):
                raise answer.error
            requests[i] = walks[i].send(answer)
        except StopIteration as done:
            results[i] = done.value
        except EvaluatorConfigurationError:
            raise
        except Exception as error:
            results[i] = FailedCorrection(str(items[i][0]), f"{type(error).__name__}: {error}", error)
    return requests
