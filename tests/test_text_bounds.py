"""Every text path is linear or bounded: each hostile input of the fourth probe, held at a size that runs well under
a second, with its complexity asserted by counting work (or, where nothing can be counted, by the ratio of two
sizes measured in one run, with a generous margin), never by absolute time."""

from __future__ import annotations

import time

from crag_shared import Corrector
from crag_shared.evaluators.base import Evaluation, RetrievalEvaluator


# -- correct() over many passages -----------------------------------------------------------------------------
class Constant(RetrievalEvaluator):
    """Scores every text the same: what is left to time is the walk itself."""

    def evaluate(self, query, texts):
        return Evaluation([-0.9] * len(texts))


def test_correct_is_linear_in_the_number_of_passages():
    """A membership test on a list per passage made `correct()` quadratic (32k nodes took 13 s). With the
    evaluator's cost taken out, twice the passages take about twice the time, measured in one run."""
    corrector = Corrector(evaluator=Constant())

    def seconds(n: int) -> float:
        passages = [f"passage {i}" for i in range(n)]
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            result = corrector.correct("Where was Henry Feilden born?", passages)
            best = min(best, time.perf_counter() - started)
        assert len(result.scores) == n
        return best

    seconds(1_000)  # warm up
    small, large = seconds(10_000), seconds(20_000)
    assert large < 3.0 * small, (small, large)
