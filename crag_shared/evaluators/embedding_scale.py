"""An embedding model's own cosine scale, found at first use on a reference set shipped with crag: no labels needed.

Embedding models disagree on what a cosine means. all-MiniLM-L6-v2 gives a question and an unrelated
passage about 0.05 and the passage that answers it about 0.6; other models put every pair above 0.7 (a
MiniLM mapping then passes everything) or below 0.5 (it then keeps nothing). The embedding judge's mapping,
`clip((cos - midpoint) / spread)`, and its thresholds were fitted on MiniLM (`UNIT_DEFAULTS`). Here the
judge's own model scores a reference set (`embedding_scale.json`: questions in nine domains, each with a
short passage that answers it, written for crag): the median cosine of a question with its own passage
(matched) and with the passages of the other domains (unrelated) are two landmarks of the model's scale.
The mapping is MiniLM's, carried over by the linear map that takes MiniLM's landmarks (recorded in the
file, per unit) onto the model's, so a threshold sits at the same place between unrelated and matched on
either; MiniLM itself gets its defaults back.
"""

from __future__ import annotations

import json
import math
import statistics
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TypedDict, cast

from .base import EvaluatorConfigurationError

__all__ = ["REFERENCE", "Landmarks", "carried", "found_once", "measure", "reference"]

REFERENCE = Path(__file__).with_name("embedding_scale.json")

#: How far the matched pairs' median cosine must stand above the unrelated pairs' 90th percentile (MiniLM: 0.6)
SEPARATION = 0.01
#: (model key, unit) -> (midpoint, spread) found in this process
_FOUND: dict[tuple[str, str], tuple[float, float]] = {}
_FOUND_LOCK = threading.Lock()


@dataclass(frozen=True)
class Landmarks:
    """Median cosines of the reference questions with their own passage and with unrelated passages."""

    matched: float
    unrelated: float


class Reference(TypedDict):
    """The reference set: `pairs` (domain, question, passage) and MiniLM's `landmarks` per unit."""

    pairs: list[dict[str, str]]
    landmarks: dict[str, list[float]]


@lru_cache(maxsize=1)
def reference() -> Reference:
    """The reference set, read once."""
    return cast(Reference, json.loads(REFERENCE.read_text(encoding="utf-8")))



def measure(cosines: Callable[[str, Sequence[str]], Sequence[float]]) -> Landmarks:
    """A model's landmarks through its judge's `cosines(question, texts)`: one call per reference question.

    Cosines that are not finite numbers are a runtime fault (`ValueError`: the model is broken now, not
    misconfigured); a model whose matched pairs do not stand above the unrelated ones (their median not
    `SEPARATION` above the unrelated pairs' 90th percentile) cannot judge, an `EvaluatorConfigurationError`."""
    pairs = reference()["pairs"]
    matched: list[float] = []
    unrelated: list[float] = []
    for pair in pairs:
        others = [p["passage"] for p in pairs if p["domain"] != pair["domain"]]
        own, *rest = cosines(pair["question"], [pair["passage"], *others])
        matched.append(own)
        unrelated.extend(rest)
    if not all(math.isfinite(value) for value in (*matched, *unrelated)):
        raise ValueError("the embedding model's cosines on crag's reference set are not finite numbers")
    found = Landmarks(statistics.median(matched), statistics.median(unrelated))
    ceiling = statistics.quantiles(unrelated, n=10)[-1]
    if found.matched - ceiling < SEPARATION:
        raise EvaluatorConfigurationError(
            f"the embedding model does not tell answers from unrelated text on crag's reference set (median "
            f"cosine {found.matched:.3f} with the answering passage, {ceiling:.3f} at the 90th percentile of "
            f"unrelated ones): it cannot judge retrieval; pass midpoint= and spread= to use it anyway")
    return found


def carried(unit: str, midpoint: float, spread: float, own: Landmarks) -> tuple[float, float]:
    """MiniLM's (`midpoint`, `spread`) for `unit`, carried onto a model whose landmarks are `own`."""
    base = Landmarks(*reference()["landmarks"][unit])
    ratio = (own.matched - own.unrelated) / (base.matched - base.unrelated)
    return own.unrelated + (midpoint - base.unrelated) * ratio, spread * ratio


def found_once(key: tuple[str, str] | None, find: Callable[[], tuple[float, float]]) -> tuple[float, float]:
    """`find()` once per process for each (model key, unit); every time without a key. A failure is not kept:
    the next call tries again."""
    if key is None:
        return find()
    with _FOUND_LOCK:
        known = _FOUND.get(key)
    if known is None:
        known = find()
        with _FOUND_LOCK:
            _FOUND[key] = known
    return known
