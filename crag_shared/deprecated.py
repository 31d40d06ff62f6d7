"""The calls renamed in 0.2.0, kept for one release: each works as before and warns with a
`DeprecationWarning` naming its new call; they are removed in 0.3.0 (docs/releases.md: how long a
deprecation lasts).

They are attached to their classes here, beside the new calls they forward to, so that no module imports
one above it; `crag_shared/__init__.py` imports this module, so every import of crag_shared has them.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

from .config import CRAGConfig
from .corrector import Corrector
from .evaluators.base import RetrievalEvaluator
from .evaluators.combined import CombinedEvaluator
from .evaluators.spec import evaluator_spec, load_combination, save_combination
from .llm import LLM
from .web.base import WebSearch

#: The release that removes the calls below.
REMOVED_IN = "0.3.0"


def warn_renamed(old: str, new: str) -> None:
    """The one warning of a renamed call, pointing at the caller's line."""
    warnings.warn(f"{old} is deprecated since 0.2.0 and is removed in {REMOVED_IN}: use {new}", DeprecationWarning,
                  stacklevel=3)


def build(config: CRAGConfig, *, llm: LLM | None = None, web_search: WebSearch | None = None,
          evaluator: RetrievalEvaluator | None = None) -> Corrector:
    """`config.build(...)`, deprecated: `Corrector.from_config(config, ...)`."""
    warn_renamed("CRAGConfig.build()", "Corrector.from_config(config, llm=..., web_search=..., evaluator=...)")
    return Corrector.from_config(config, llm=llm, web_search=web_search, evaluator=evaluator)


def spec(evaluator: RetrievalEvaluator) -> str:
    """`evaluator.spec`, deprecated: `evaluator_spec(evaluator)`."""
    warn_renamed("evaluator.spec", "evaluator_spec(evaluator) from crag_shared.evaluators")
    return evaluator_spec(evaluator)


def save(combination: CombinedEvaluator, path: str | Path) -> None:
    """`combination.save(path)`, deprecated: `save_combination(combination, path)`."""
    warn_renamed("CombinedEvaluator.save(path)", "save_combination(combination, path) from crag_shared.evaluators")
    save_combination(combination, path)


def load(cls: type[CombinedEvaluator], path: str | Path, members: Sequence[str] | None = None) -> CombinedEvaluator:
    """`CombinedEvaluator.load(path, members)`, deprecated: `load_combination(path, members)`."""
    warn_renamed("CombinedEvaluator.load(path)", "load_combination(path, members) from crag_shared.evaluators")
    return load_combination(path, members)


CRAGConfig.build = build  # type: ignore[attr-defined]
RetrievalEvaluator.spec = property(spec)  # type: ignore[attr-defined]
CombinedEvaluator.save = save  # type: ignore[attr-defined]
CombinedEvaluator.load = classmethod(load)  # type: ignore[attr-defined]
