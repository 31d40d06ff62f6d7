"""The default judge, in one room: what `evaluator="default"` (and every Corrector built without a judge) scores
passages with, and where each of its parts lives.

- In English, with the reader installed (`crag-shared[reader]`, which both adapters install): the reader blended
  with the lexical judge, `combined:reader-lexical`. The blend's weights and thresholds are
  `crag_shared/combinations/reader-lexical.json`; the reader's weights, card and run record are the `crag_reader`
  distribution; the recipe that trains and fits them is `benchmarks/reader/` (`crag-bench train-reader`).
- Elsewhere (another language, or no reader): the lexical judge in the question's language (`lexical.py`).
- `CRAG_DEFAULT_EVALUATOR` pins it to any other spec (e.g. "lexical" where no model may load).
- Where the caller holds an LLM, `evaluator="auto"` (`CRAGConfig`'s default) judges with that LLM instead, and
  keeps this judge as its offline partner for faults, skipped calls and strips (`llm.py`).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from ..specs import Kind
from .base import RetrievalEvaluator
from .lexical import LexicalEvaluator
from .spec import EVALUATOR_SPECS, evaluator_from_spec, evaluator_kind

__all__ = ["DEFAULT_ENV", "default_evaluator"]

#: The environment setting that pins the judge "default" stands for, as a spec (e.g. "lexical" for a
#: deployment that must not load a model, or a test suite written for the lexical judge).
DEFAULT_ENV = "CRAG_DEFAULT_EVALUATOR"
#: What "default" stands for in English when the reader is installed.
DEFAULT_BLEND = "reader-lexical"
_TOLD_NO_READER: list[bool] = []


def default_evaluator(language: str = "en", **kwargs: Any) -> RetrievalEvaluator:
    """The judge "default" stands for: in English, when the reader's distribution is installed
    (`crag-shared[reader]`, which both adapters install), the reader blended with the lexical judge
    (`combined:reader-lexical`); else the lexical judge in `language`; the spec in `CRAG_DEFAULT_EVALUATOR`
    when set. Which one was taken is in every trace."""
    pinned = os.environ.get(DEFAULT_ENV, "").strip()
    if pinned:
        if evaluator_kind(pinned) == "default":
            raise ValueError(f"{DEFAULT_ENV}={pinned!r} names the default itself: give a judge's spec, e.g. 'lexical'")
        if pinned == "lexical":
            kwargs["language"] = language
        return evaluator_from_spec(pinned, **kwargs)
    if language == "en":
        try:
            return evaluator_from_spec(f"combined:{DEFAULT_BLEND}", **kwargs)
        except ImportError as error:
            if not _TOLD_NO_READER:
                _TOLD_NO_READER.append(True)
                logging.getLogger("crag").info("judging with the lexical evaluator: %s", error)
    return LexicalEvaluator(language=language, **kwargs)


EVALUATOR_SPECS.register(Kind("default", "none", lambda target, **kwargs: default_evaluator(**kwargs)),
                         before="lexical")
