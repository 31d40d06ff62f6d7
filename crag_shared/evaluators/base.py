"""The retrieval-evaluator interface: one score in [-1, 1] per (query, text) pair, all texts in one call."""

from __future__ import annotations

import inspect
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from ..aio import in_thread


class EvaluatorConfigurationError(ValueError):
    """An evaluator that cannot work as configured (a model that does not load, an untrained head).

    Unlike a fault while scoring, this is never replaced by the fallback evaluator: it reaches the
    caller at the first use (or at `warm_up`)."""


#: How the LLM judge names itself among the judges of an `Evaluation` (`Evaluation.judges`).
LLM_JUDGE = "llm"


@dataclass(frozen=True)
class Fault:
    """A runtime fault an evaluator recovered from itself (an LLM that failed, timed out or answered out of
    format): why, and what scored instead. The corrector records each as a fallback in the trace."""

    reason: str
    applied: str


@dataclass
class Evaluation:
    """Scores in input order, plus notes about anything unusual, and, from evaluators that explain their
    scores, one reason per text ("" where there is none to give). An evaluator that asks another judge for
    some texts (the LLM judge and its offline partner) says which judge gave each score (`judges`, empty when
    it gave them all), which faults it recovered from (`faults`) and how many LLM calls it made."""

    scores: list[float]
    notes: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    judges: list[str] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    llm_calls: int = 0


class RetrievalEvaluator(ABC):
    """Scores how well each text answers a query, as an absolute value in [-1, 1].

    Scores are absolute so that thresholds mean something: a pair's score never depends on the other
    texts scored with it (the LLM judge in batched mode is the documented exception). Each backend
    carries default thresholds fitted to its own score distribution.
    """

    #: (upper, lower) action thresholds suited to this evaluator's scores.
    default_thresholds: ClassVar[tuple[float, float]] = (0.5, -0.5)
    #: Whether it reads a passage's title with its text ("title: text"), whatever `score_titles` says.
    reads_titles: bool = False

    @property
    def floor(self) -> float:
        """The lowest score it gives: what a text gets that holds nothing of the question."""
        return -1.0

    @property
    def strip_evaluator(self) -> "RetrievalEvaluator":
        """Who scores the strips of the passages this evaluator judged: itself, unless it is too costly to ask
        again (the LLM judge names its offline partner)."""
        return self

    @property
    def thresholds(self) -> tuple[float, float]:
        """The thresholds given to this instance (`_thresholds`), else the backend's defaults."""
        own = getattr(self, "_thresholds", None)
        return (own[0], own[1]) if own is not None else self.default_thresholds

    def warm_up(self) -> None:
        """Load models; called automatically on first use, and idempotent."""

    def init_parameters(self) -> dict[str, object]:
        """The keyword settings this evaluator was built with, read back from its instance attributes
        (`_name` as given, else `name`) for every keyword parameter of its class's constructors;
        `evaluator_options` saves those its spec does not carry."""
        names: list[str] = []
        for cls in type(self).__mro__:
            init = cls.__dict__.get("__init__")
            if init is None:
                continue
            parameters = inspect.signature(init).parameters.values()
            names += [p.name for p in parameters if p.name not in _SPEC_CARRIED
                      and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]
            if not any(p.kind is p.VAR_KEYWORD for p in parameters):
                break
        own = vars(self)
        values = {name: own[f"_{name}"] if f"_{name}" in own else own[name]
                  for name in dict.fromkeys(names) if f"_{name}" in own or name in own}
        return {name: list(v) if isinstance(v, tuple) else v for name, v in values.items()}

    def __getstate__(self) -> dict[str, object]:
        """Pickle and deepcopy without the lock that guards loading and caches (a fresh one on restore)."""
        state = self.__dict__.copy()
        if "_lock" in state:
            state["_lock"] = None
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        if "_lock" in state:
            self._lock = threading.RLock()

    def clear_cache(self) -> None:
        """Forget any per-text results kept between calls (benchmarks measure cold texts this way)."""

    @abstractmethod
    def evaluate(self, query: str, texts: Sequence[str]) -> Evaluation:
        """Score every text against the query in as few model passes as possible."""

    def evaluate_batch(self, requests: Sequence[tuple[str, Sequence[str]]]) -> list[Evaluation]:
        """Several queries' texts at once (`Corrector.correct_many`); model backends batch across queries.
        Scores equal `evaluate` on each request alone."""
        return [self.evaluate(query, texts) for query, texts in requests]

    async def aevaluate(self, query: str, texts: Sequence[str]) -> Evaluation:
        """Async scoring; model backends run in a worker thread so the event loop stays free."""
        return await in_thread(self.evaluate, query, texts)

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """The scores alone, one per text in [-1, 1] (`evaluate` without its notes)."""
        return self.evaluate(query, _checked(texts)).scores

    async def ascore(self, query: str, texts: Sequence[str]) -> list[float]:
        """Async `score`."""
        return (await self.aevaluate(query, _checked(texts))).scores


def _checked(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("texts must be a sequence of strings, not a single string")
    texts = list(texts)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"texts[{i}] is {type(text).__name__}, expected str")
    return texts


#: Constructor parameters that a spec carries itself (its target) or the adapter passes again.
_SPEC_CARRIED = frozenset({"self", "model", "llm", "members", "weights", "bias"})  # combined: in its file
