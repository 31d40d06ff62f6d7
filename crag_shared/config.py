"""The serializable CRAG configuration every adapter keeps (`Corrector.from_config` builds from it).

Framework adapters keep only this plain config in their serialized form (`model_dump`, `to_dict`); live
objects (LLM clients, web providers with keys) are passed separately and never serialized. It is a pydantic
dataclass: the settings' types and bounds are its declaration, the same one its JSON Schema is written from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, fields
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, JsonValue, StrictBool, StrictInt, StrictStr, TypeAdapter, field_validator
from pydantic.dataclasses import dataclass

from .scores import Threshold
from .text.analysis import check_language

#: How retrieved passages (or web paragraphs) become strips (paper section 4.4; `StripRefiner`'s modes).
RefineMode = Literal["fixed_num", "excerption", "selection"]
#: What Incorrect does without web knowledge: abstain ("drop", the paper) or keep the best strips, flagged.
OnWebFailure = Literal["keep", "drop"]
#: What an Ambiguous question's strips that CRAG could not verify (below the upper threshold) do: dropped
#: without web knowledge ("drop", unless `on_web_failure="keep"`), or handed on marked unverified ("guard").
AmbiguousMode = Literal["drop", "guard"]


#: A count of at least one; a length of at least 100 characters.
AtLeastOne = Annotated[StrictInt, Field(ge=1)]
AtLeast100 = Annotated[StrictInt, Field(ge=100)]


@dataclass(frozen=True, config=ConfigDict(extra="forbid", strict=True))
class CRAGConfig:
    """The knobs of one CRAG corrector, as plain values, declared and checked by pydantic (a wrong type or value
    fails where it is given, naming the setting); read-only (`dataclasses.replace` makes a changed copy, checked
    again). Its JSON Schema: `CRAGConfig.model_json_schema()` (`crag schema config`).

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

    evaluator: StrictStr = "auto"
    evaluator_options: dict[StrictStr, JsonValue] | None = None
    upper: Threshold | None = None
    lower: Threshold | None = None
    thresholds_path: StrictStr | None = None
    refine_mode: RefineMode = "excerption"
    strip_top_k: AtLeastOne = 5
    strip_threshold: Threshold = -0.5
    web_top_k: AtLeastOne = 5
    on_web_failure: OnWebFailure = "drop"
    ambiguous: AmbiguousMode = "drop"
    score_titles: StrictBool = False
    web_refine_mode: RefineMode = "selection"
    max_keywords: AtLeastOne = 3
    fallback_evaluator: StrictStr | None = "lexical"
    max_strip_chars: AtLeast100 = 2_000
    language: StrictStr = "en"

    @field_validator("language")
    @classmethod
    def _known_language(cls, value: str) -> str:
        return check_language(value)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CRAGConfig:
        """Rebuild from `to_dict`'s output; a malformed dict raises ValueError naming what is wrong."""
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown CRAG settings: {sorted(unknown)}; known: {sorted(known)}")
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        """This object as JSON-ready values."""
        return asdict(self)

    @classmethod
    def model_json_schema(cls) -> dict[str, Any]:
        """The JSON Schema of a config's dict form (`to_dict`, a saved component's settings)."""
        return TypeAdapter(cls).json_schema()
