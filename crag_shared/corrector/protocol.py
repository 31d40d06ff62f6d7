"""The protocol between Algorithm 1 and its drivers: what a walk asks for, and the answers it receives.

A walk is a generator (see `walk.py`). It yields a `ScoreRequest`, a `WebRequest`, or a `BothRequest`
(Ambiguous: refine while searching), and is sent back an `Evaluation` (or `Failed`), a `WebAnswer`, or
a pair of both. `Corrector`'s drivers answer them one query at a time, sync or async, or many queries
together (`many.py`): every decision is the walk's, so all drivers decide alike.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import TypeAlias, TypeVar

from ..evaluators.base import Evaluation, RetrievalEvaluator
from ..policy import ActionPolicy
from ..rewrite import Rewrite
from ..types import CorrectionResult, WebSearchResponse


@dataclass(frozen=True)
class ScoreRequest:
    """Score `texts` against `query` with `evaluator` (the walk's evaluator, or its fallback)."""

    evaluator: RetrievalEvaluator
    query: str
    texts: list[str]


@dataclass(frozen=True)
class WebRequest:
    """Rewrite `question` into keywords and search the web for `top_k` results."""

    question: str
    top_k: int


@dataclass(frozen=True)
class BothRequest:
    """Both at once (Ambiguous: the internal strips are scored while the web is searched)."""

    first: ScoreRequest
    second: WebRequest


@dataclass(frozen=True)
class Failed:
    """A runtime fault of one step (the evaluator or the search raised): the walk takes its fallback."""

    error: BaseException


@dataclass(frozen=True)
class WebAnswer:
    """The rewrite used and the search's response, or its failure."""

    rewrite: Rewrite
    response: WebSearchResponse | Failed


@dataclass(frozen=True)
class QueryFailed:
    """In a batch, one query's request broke (a provider's bug): that query alone fails."""

    error: BaseException


@dataclass
class ScoringState:
    """Per-query state: the evaluator in use (it changes on fallback), its policy, and the score cache; the
    evaluator of strips (`RetrievalEvaluator.strip_evaluator`) with its own cache when it is another one; by
    text, why a text was lowered and which judge scored it (where the evaluator asks several); LLM calls made."""

    evaluator: RetrievalEvaluator
    policy: ActionPolicy
    cache: dict[str, float] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)  # why the evaluator lowered a text, by text
    judges: dict[str, str] = field(default_factory=dict)
    strip_evaluator: RetrievalEvaluator | None = None
    strip_cache: dict[str, float] = field(default_factory=dict)
    llm_calls: int = 0

    def __post_init__(self) -> None:
        if self.strip_evaluator is None:
            self.strip_evaluator = self.evaluator.strip_evaluator

    def scorer(self, strips: bool) -> tuple[RetrievalEvaluator, dict[str, float]]:
        """The evaluator and cache for passages, or for strips (the same pair unless strips have their own)."""
        if strips and self.strip_evaluator is not self.evaluator and self.strip_evaluator is not None:
            return self.strip_evaluator, self.strip_cache
        return self.evaluator, self.cache


Request: TypeAlias = "ScoreRequest | WebRequest | BothRequest"
ScoreAnswer: TypeAlias = "Evaluation | Failed"
Answer: TypeAlias = "ScoreAnswer | WebAnswer | tuple[ScoreAnswer, WebAnswer] | QueryFailed | None"
T = TypeVar("T")
#: A part of the walk that ends in a T: it yields requests and is sent their answers.
Step: TypeAlias = "Generator[Request, Answer, T]"
Walk: TypeAlias = "Step[CorrectionResult]"
