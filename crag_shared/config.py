"""The serializable CRAG configuration every adapter keeps (`Corrector.from_config` builds from it).

Framework adapters keep only this plain config in their serialized form (`model_dump`, `to_dict`); live
objects (LLM clients, web providers with keys) are passed separately and never serialized.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

from .text.analysis import check_language

#: How retrieved passages (or web paragraphs) become strips (paper section 4.4; `StripRefiner`'s modes).
RefineMode = Literal["fixed_num", "excerption", "selection"]
#: What Incorrect does without web knowledge: abstain ("drop", the paper) or keep the best strips, flagged.
OnWebFailure = Literal["keep", "drop"]
#: What an Ambiguous question's strips that CRAG could not verify (below the upper threshold) do: dropped
#: without web knowledge ("drop", unless `on_web_failure="keep"`), or handed on marked unverified ("guard").
AmbiguousMode = Literal["drop", "guard"]


@dataclass
class CRAGConfig:
    """The knobs of one CRAG corrector, as plain values; read-only once checked (assign a new one).

    `evaluator` is a spec, as `EVALUATOR_SPECS.grammar()` lists them ("auto", the default: the LLM judge where
    the corrector holds an LLM, else "default"; "default": the reader blended with the lexical judge when the
    reader is installed, for English, else lexical; "reader", "lexical", "cross-encoder:PATH_OR_ID", "llm",
    "combined:lexical-minilm"...; the LLM judge uses the adapter's LLM, or the one named to judge);
    `evaluator_options` are its constructor's keyword settings as plain values
    (`{"max_length": 256, "quantize": True}`).
    Thresholds: `thresholds_path` (JSON from `crag calibrate`) wins over `upper`/`lower`; a threshold
    left as None takes the evaluator's default. Refinement: `refine_mode` for retrieved passages,
    `web_refine_mode` for web paragraphs, both keeping at most `strip_top_k` strips scoring at least
    `strip_threshold`, each at most `max_strip_chars` long (text without sentence punctuation is cut at
    word boundaries). `on_web_failure`: what Incorrect does without web knowledge, "drop" (the paper:
    abstain) or "keep" (the internal passages' best strips, flagged; Ambiguous then keeps its strips that pass the
    strip threshold too). `ambiguous`: what an Ambiguous question's strips scoring below the upper threshold
    do, "drop" (without web knowledge they are dropped, unless `on_web_failure="keep"`) or "guard" (they
    reach the generator marked unverified, with the instruction to answer only from a passage that states
    the answer and otherwise say it was not found). `max_keywords` bounds the search
    rewrite; `fallback_evaluator` (a spec, or None to re-raise) scores when the evaluator fails at run
    time. `language` (ISO 639-1, or "auto" to detect each question's) is what the lexical and embedding
    evaluators, the strip refiners and the offline keyword rewrite analyze text as, and the language whose
    follow-up table the Corrector reads questions with (`crag_shared.text.follow_up`). Every Corrector setting
    is here, under the name the Haystack components use too.
    """

    evaluator: str = "auto"
    evaluator_options: dict[str, Any] | None = None
    upper: float | None = None
    lower: float | None = None
    thresholds_path: str | None = None
    refine_mode: RefineMode = "excerption"
    strip_top_k: int = 5
    strip_threshold: float = -0.5
    web_top_k: int = 5
    on_web_failure: OnWebFailure = "drop"
    ambiguous: AmbiguousMode = "drop"
    score_titles: bool = False
    web_refine_mode: RefineMode = "selection"
    max_keywords: int = 3
    fallback_evaluator: str | None = "lexical"
    max_strip_chars: int = 2_000
    language: str = "en"

    def __post_init__(self) -> None:
        """Every setting checked where it is given, naming it: a wrong type or value fails here, not deep
        inside the first query."""
        _expect("evaluator", self.evaluator, isinstance(self.evaluator, str), "a spec string")
        options = self.evaluator_options
        _expect("evaluator_options", options, options is None or (
            isinstance(options, Mapping) and all(isinstance(k, str) for k in options) and _plain(options)),
            "a dict of plain (JSON) values or None")
        if options is not None:
            object.__setattr__(self, "evaluator_options", dict(options))
        for name in ("thresholds_path", "fallback_evaluator"):
            value = getattr(self, name)
            _expect(name, value, value is None or isinstance(value, str), "a string or None")
        for name in ("upper", "lower", "strip_threshold"):
            value = getattr(self, name)
            ok = (value is None and name != "strip_threshold") or (_is_number(value) and -1.0 <= value <= 1.0)
            _expect(name, value, ok, "a number in [-1, 1]" + (" or None" if name != "strip_threshold" else ""))
        for name, least in (("strip_top_k", 1), ("web_top_k", 1), ("max_keywords", 1), ("max_strip_chars", 100)):
            value = getattr(self, name)
            _expect(name, value, isinstance(value, int) and not isinstance(value, bool) and value >= least,
                    f"an integer of at least {least}")
        for name in ("refine_mode", "web_refine_mode"):
            value = getattr(self, name)
            _expect(name, value, value in ("fixed_num", "excerption", "selection"),
                    "'excerption', 'fixed_num' or 'selection'")
        _expect("on_web_failure", self.on_web_failure, self.on_web_failure in ("keep", "drop"), "'drop' or 'keep'")
        _expect("ambiguous", self.ambiguous, self.ambiguous in ("drop", "guard"), "'drop' or 'guard'")
        _expect("score_titles", self.score_titles, isinstance(self.score_titles, bool), "True or False")
        try:
            check_language(self.language)
        except ValueError as error:
            raise ValueError(f"CRAG setting {error}") from None
        object.__setattr__(self, "_sealed", True)

    def __setattr__(self, name: str, value: object) -> None:
        """Settings are fixed once checked: a changed field would not reach the corrector built from it."""
        if getattr(self, "_sealed", False):
            raise AttributeError(f"CRAGConfig is read-only: to change {name}, assign a new config, e.g. "
                                 f"postprocessor.config = dataclasses.replace(postprocessor.config, {name}=...)")
        object.__setattr__(self, name, value)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "CRAGConfig":
        """Rebuild from `to_dict`'s output; a malformed dict raises ValueError naming what is wrong."""
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown CRAG settings: {sorted(unknown)}; known: {sorted(known)}")
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        """This object as JSON-ready values."""
        return asdict(self)


def _plain(value: object) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def _expect(name: str, value: object, ok: bool, what: str) -> None:
    if not ok:
        raise ValueError(f"CRAG setting {name} must be {what}, got {value!r} ({type(value).__name__})"[:300])
