"""What a `CRAGConfig` builds: its evaluator, policy, refiners and the corrector's other parts.

The config itself stays plain values (it sits below the corrector and imports none of it); the parts
are made here, where the corrector is known. `Corrector.from_config` calls `corrector_parts`.
"""

from __future__ import annotations

from typing import Any

from ..config import CRAGConfig
from ..evaluators.base import RetrievalEvaluator
from ..evaluators.spec import LLM_KINDS, evaluator_from_spec, evaluator_kind, shared_evaluator
from ..llm import LLM
from ..policy import ActionPolicy
from ..refine import StripRefiner
from ..rewrite import QueryRewriter


def evaluator_settings(config: CRAGConfig, spec: str | None = None) -> dict[str, Any]:
    """The options an evaluator spec (default: the config's `evaluator`) is built with: `evaluator_options`,
    and the `language` for the evaluators that analyze text (lexical, embedding) when it is not English."""
    spec = spec or config.evaluator
    options = dict(config.evaluator_options or {}) if spec == config.evaluator else {}
    kind = evaluator_kind(spec)
    if config.language != "en" and (kind in ("lexical", "default", "auto") or "embedding" in kind):
        options.setdefault("language", config.language)
    return options


def config_evaluator(config: CRAGConfig, llm: LLM | None = None) -> RetrievalEvaluator:
    """The evaluator the config's spec names: LLM judges ("llm", and "auto" where there is an LLM) are built with
    `llm`; models are shared per process (`shared_evaluator`), so several components naming one model load it
    once."""
    kind = evaluator_kind(config.evaluator)
    if kind == "llm" or (kind == "auto" and llm is not None):
        return evaluator_from_spec(config.evaluator, llm=llm, **evaluator_settings(config))
    if kind in LLM_KINDS:
        return shared_evaluator("default", evaluator_settings(config) or None)
    return shared_evaluator(config.evaluator, evaluator_settings(config) or None)


def config_policy(config: CRAGConfig, evaluator: RetrievalEvaluator) -> ActionPolicy:
    """The action policy: the thresholds file if given, else `upper`/`lower` over the evaluator's defaults."""
    if config.thresholds_path:
        return ActionPolicy.load(config.thresholds_path)
    default_upper, default_lower = evaluator.thresholds
    return ActionPolicy(default_upper if config.upper is None else config.upper,
                        default_lower if config.lower is None else config.lower)


def config_refiner(config: CRAGConfig, *, web: bool = False) -> StripRefiner:
    """The strip refiner for retrieved passages, or with `web=True` for web paragraphs."""
    return StripRefiner(config.web_refine_mode if web else config.refine_mode, top_k=config.strip_top_k,
                        threshold=config.strip_threshold, max_strip_chars=config.max_strip_chars,
                        language=config.language)


def corrector_parts(config: CRAGConfig, llm: LLM | None = None, evaluator: RetrievalEvaluator | None = None,
                    judge_llm: LLM | None = None) -> dict[str, Any]:
    """Every `Corrector` argument the config sets, by name (`llm` serves the rewriter, `judge_llm` the LLM
    judge)."""
    evaluator = evaluator or config_evaluator(config, judge_llm)
    fallback = (shared_evaluator(config.fallback_evaluator,
                                 evaluator_settings(config, config.fallback_evaluator) or None)
                if config.fallback_evaluator else None)
    return {"evaluator": evaluator, "policy": config_policy(config, evaluator), "refiner": config_refiner(config),
            "rewriter": QueryRewriter(llm, max_keywords=config.max_keywords, language=config.language),
            "web_refiner": config_refiner(config, web=True), "web_top_k": config.web_top_k,
            "on_web_failure": config.on_web_failure, "ambiguous": config.ambiguous, "fallback_evaluator": fallback,
            "score_titles": config.score_titles, "language": config.language}
