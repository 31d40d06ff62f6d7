"""Evaluator specs: the one table that reads a spec ("lexical", "cross-encoder:PATH", "llm:per_document"...)
into an evaluator and writes an evaluator back as its spec. The CLI, `CRAGConfig`, the adapters and
serialized components all come here; error messages and help texts show the table's grammar.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..files import read_settings_text
from ..llm import LLM
from ..scores import Threshold
from ..specs import Kind, SpecTable
from ..summary import first_error
from .base import RetrievalEvaluator
from .combined import CombinedEvaluator
from .cross_encoder import CrossEncoderEvaluator
from .embedding import SPEC_SUFFIX, EmbeddingEvaluator, Unit, embedding_kind
from .lexical import LexicalEvaluator
from .onnx import OnnxCrossEncoderEvaluator
from .onnx_embedding import OnnxEmbeddingEvaluator
from .reader import ReaderEvaluator
from .t5 import T5Evaluator

__all__ = [
    "EVALUATOR_SPECS", "LLM_KINDS", "SHIPPED_COMBINATIONS", "CombinationFile", "combination_dict", "describe",
    "embedding_unit", "evaluator_from_spec", "evaluator_kind", "evaluator_options", "evaluator_spec",
    "load_combination", "save_combination", "shared_evaluator",
]

#: Combinations that ship with crag (`combined:NAME`): reader-lexical, the judge "default" stands for in English
#: (the reader blended with the lexical judge, fitted with the reader's weights on the judge sets' tune halves,
#: answers first); lexical-minilm is LexicalEvaluator + all-MiniLM-L6-v2's cosine (unit "matched"), fitted on
#: qa_pairs train. Its encoder is named by hub id; to use a local copy,
#: `save_combination(load_combination(SHIPPED_COMBINATIONS / "lexical-minilm.json", members=[...]), "mine.json")`.
SHIPPED_COMBINATIONS = Path(__file__).resolve().parent.parent / "combinations"


def _model(name: str, cls: type[Any], aliases: tuple[str, ...] = ()) -> Kind[RetrievalEvaluator]:
    """A model evaluator named by a checkpoint: a local path (which must exist) or a hub id."""
    def build(target: str, **kwargs: Any) -> RetrievalEvaluator:
        _must_exist(f"{name}:{target}", target)
        return cls(target, **kwargs)

    return Kind(name, "required", build, cls, lambda e: e.model_name, aliases=aliases, placeholder="PATH_OR_ID")


def _embedding(cls: type[EmbeddingEvaluator], unit: Unit) -> Kind[RetrievalEvaluator]:
    """An embedding evaluator of one unit; without a path (torch backend only) it names the framework's
    embedding model, which the adapters build."""
    name = cls.spec_prefix + SPEC_SUFFIX[unit]

    def build(target: str, **kwargs: Any) -> RetrievalEvaluator:
        if not target:
            raise ValueError(f"evaluator {name!r} without a path uses the framework's embedding model: the "
                             "adapters build it (LlamaIndex Settings.embed_model, Haystack embedders); here "
                             f"pass '{name}:PATH'")
        _must_exist(f"{name}:{target}", target)
        return cls(target, unit=unit, **kwargs)

    return Kind(name, "optional" if cls is EmbeddingEvaluator else "required", build, cls,
                lambda e: e.model_name or "", placeholder="PATH_OR_ID", accepts=lambda e: e.unit == unit)


#: The kinds built with the adapter's LLM (registered by `crag_shared.evaluators.llm`): "llm" always judges with
#: it; "auto" does where there is one, else takes "default".
LLM_KINDS = ("llm", "auto")
def _reader(target: str, **kwargs: Any) -> ReaderEvaluator:
    """The shipped reader, or a reader export of your own at `target`."""
    if target:
        _must_exist(f"reader:{target}", target)
    return ReaderEvaluator(target or None, **kwargs)


def _combination(target: str, **kwargs: Any) -> CombinedEvaluator:
    shipped = SHIPPED_COMBINATIONS / f"{target}.json"
    if "/" in target or not shipped.is_file():
        _must_exist(f"combined:{target}", target)
        return load_combination(target, **kwargs)
    combination = load_combination(shipped, **kwargs)
    combination.path = target  # its spec stays `combined:NAME`, wherever crag is installed
    return combination


def _combination_path(evaluator: CombinedEvaluator) -> str:
    if evaluator.path is None:
        raise NotImplementedError("save() the combination first: its spec is combined:PATH")
    return evaluator.path


def _custom(target: str, **kwargs: object) -> RetrievalEvaluator:
    raise ValueError(f"evaluator 'custom:{target}' is an evaluator class of your own: a spec cannot rebuild it; "
                     "pass the instance itself (evaluator=...)")


EVALUATOR_SPECS: SpecTable[RetrievalEvaluator] = SpecTable("evaluator", [
    Kind("lexical", "none", lambda target, **kwargs: LexicalEvaluator(**kwargs), LexicalEvaluator, lambda e: ""),
    Kind("reader", "optional", _reader, ReaderEvaluator, lambda e: "" if e.shipped else e.model_name,
         placeholder="PATH"),
    _model("t5", T5Evaluator),
    _model("cross-encoder", CrossEncoderEvaluator, aliases=("cross_encoder", "ce")),
    _model("onnx", OnnxCrossEncoderEvaluator),
    *(_embedding(EmbeddingEvaluator, unit) for unit in get_args(Unit)),
    *(_embedding(OnnxEmbeddingEvaluator, unit) for unit in get_args(Unit)),
    Kind("combined", "required", _combination, CombinedEvaluator, _combination_path, placeholder="FILE_OR_NAME"),
    Kind("custom", "required", _custom, placeholder="MODULE.CLASS"),  # written by adapters for your own class
])


def evaluator_spec(evaluator: RetrievalEvaluator) -> str:
    """The short string that `evaluator_from_spec` turns back into an equal evaluator ("lexical",
    "t5:PATH"...); NotImplementedError for a class no spec describes (your own, a subclass)."""
    return EVALUATOR_SPECS.write(evaluator)


def describe(evaluator: RetrievalEvaluator) -> str:
    """The evaluator's spec, or its class name when no spec describes it (for messages and traces)."""
    try:
        return evaluator_spec(evaluator)
    except NotImplementedError:
        return type(evaluator).__name__


#: 2: `embedding:` / `onnx-embedding:` members mean the unit "matched"; in format 1 files they meant the
#: unit "sentence", which `load_combination` keeps for them (as `embedding-sentence:`), so old fits reproduce.
COMBINATION_FORMAT = 2


class CombinationFile(BaseModel):
    """A combination file (`save_combination`, spec `combined:PATH`): its members' specs, one weight each, the
    bias, the (upper, lower) thresholds fitted with it, and the fit's report."""

    model_config = ConfigDict(extra="forbid")
    format: Literal[1, 2]
    members: list[Annotated[str, Field(strict=True)]] = Field(min_length=1)
    weights: list[Annotated[float, Field(strict=True, allow_inf_nan=False)]]
    bias: Annotated[float, Field(strict=True, allow_inf_nan=False)]
    thresholds: tuple[Threshold, Threshold]
    report: dict[str, Any] | None = None


def combination_dict(combination: CombinedEvaluator) -> dict[str, Any]:
    """A combination as JSON-ready values: its members' specs, weights, bias, thresholds and fit report."""
    return {"format": COMBINATION_FORMAT, "members": [evaluator_spec(m) for m in combination.members],
            "weights": combination.weights, "bias": combination.bias,
            "thresholds": list(combination.thresholds), "report": combination.report}


#: The combination files being loaded in this context, outermost first (a file naming itself is an error).
_LOADING: ContextVar[tuple[str, ...]] = ContextVar("crag_loading_combinations", default=())


def save_combination(combination: CombinedEvaluator, path: str | Path) -> None:
    """Write a combination as JSON, readable by `load_combination` and the spec `combined:PATH`."""
    Path(path).write_text(json.dumps(combination_dict(combination), indent=2) + "\n")
    combination.path = str(path)


def load_combination(path: str | Path, members: Sequence[str] | None = None) -> CombinedEvaluator:
    """The combination in `path`. `members` replaces its member specs, in order, with the same models where
    you keep them (a shipped file names the encoder by hub id: pass your local copy, or its ONNX export,
    e.g. `["lexical", "onnx-embedding:./all-MiniLM-L6-v2"]`). The file must be a regular file of at most
    `MAX_SETTINGS_BYTES`; a combination that names itself, directly or through another, is refused."""
    where = str(Path(path).expanduser().resolve())
    loading = _LOADING.get()
    if where in loading:
        raise ValueError(f"evaluator combined:{path}: a combination that names itself "
                         f"({' -> '.join([*loading, where])})")
    text = read_settings_text(path, "evaluator combined:")
    try:
        data = CombinationFile.model_validate_json(text)
    except ValidationError as error:
        raise ValueError(f"{path}: not a crag combination file ({first_error(error)})") from None
    saved = [_sentence_unit(spec) if data.format == 1 else spec for spec in data.members]
    specs = saved if members is None else list(members)
    if len(specs) != len(data.members):
        raise ValueError(f"{path}: {len(specs)} member specs given for {len(data.members)} members")
    weights, bias, thresholds = data.weights, data.bias, data.thresholds
    token = _LOADING.set((*loading, where))
    try:
        evaluators = [evaluator_from_spec(spec) for spec in specs]
    finally:
        _LOADING.reset(token)
    try:
        return CombinedEvaluator(evaluators, weights, bias, thresholds=thresholds, path=str(path),
                                 report=data.report)
    except (ValueError, TypeError) as error:
        raise ValueError(f"{path}: not a crag combination file ({type(error).__name__}: {error})") from None


def _sentence_unit(spec: str) -> str:
    """A format 1 member spec as it reads today: `embedding:X` -> `embedding-sentence:X` (same for ONNX)."""
    kind, _, target = spec.partition(":")
    embedding = embedding_kind(kind.strip().lower())
    if embedding and embedding[1] == "matched" and target:
        return f"{embedding[0]}{SPEC_SUFFIX['sentence']}:{target}"
    return spec


def evaluator_from_spec(spec: str, *, llm: LLM | None = None, **kwargs: Any) -> RetrievalEvaluator:
    """Build an evaluator from its spec (`EVALUATOR_SPECS.grammar()`): 'lexical', 't5:PATH_OR_ID',
    'cross-encoder:PATH_OR_ID', 'onnx:PATH_OR_ID', 'embedding[-sentence|-passage]:PATH_OR_ID' (bi-encoder
    cosine: of the 2 sentences that best match the question's words, of every sentence, of the whole
    passage), 'onnx-embedding[-sentence|-passage]:PATH_OR_ID', 'combined:FILE_OR_NAME' or 'llm[:per_document]'
    (the LLM judge, which needs `llm`). `kwargs` go to the evaluator's constructor.

    A target that is a path (absolute, relative with ./ or ../, or under ~) must exist: a typo fails
    here, not at the first query; anything else is taken as a hub id."""
    kind, target = EVALUATOR_SPECS.parse(spec)
    if kind.name in LLM_KINDS:
        return kind.build(target, llm=llm, **kwargs)
    return kind.build(target, **kwargs)


def evaluator_kind(spec: str) -> str:
    """The kind an evaluator spec names ("lexical", "llm", "embedding"...), read by the table."""
    return EVALUATOR_SPECS.parse(spec)[0].name


def embedding_unit(spec: str) -> str | None:
    """For the specs that name the framework's own embedding model ("embedding", "embedding-sentence",
    "embedding-passage"), the unit the adapters build `EmbeddingEvaluator` with; None for every other spec."""
    name = spec.strip().lower()
    for unit, suffix in SPEC_SUFFIX.items():
        if name == EmbeddingEvaluator.spec_prefix + suffix:
            return unit
    return None


def evaluator_options(evaluator: RetrievalEvaluator) -> dict[str, Any]:
    """The constructor settings of `evaluator` that its spec does not carry: what `evaluator_from_spec(spec,
    **options)` needs to rebuild an equal evaluator (`max_length=128`, `thresholds`, `quantize`...).

    Raises NotImplementedError naming what cannot be saved: a class no spec describes (your own, a
    subclass), or a setting that is not plain data (a function, a model object)."""
    spec = evaluator_spec(evaluator)
    unit = embedding_unit(spec)
    if isinstance(evaluator, EmbeddingEvaluator) and unit:  # the framework's model, which the adapter passes again
        settings = evaluator.init_parameters()
        reference: RetrievalEvaluator = EmbeddingEvaluator(embed_query=settings["embed_query"],  # type: ignore[arg-type]
                                                           embed_texts=settings["embed_texts"],  # type: ignore[arg-type]
                                                           unit=unit)  # type: ignore[arg-type]
    elif evaluator_kind(spec) in LLM_KINDS:  # its LLM is the adapter's, passed again on rebuilding
        reference = evaluator_from_spec(spec, llm=getattr(evaluator, "llm", None))
    else:
        reference = evaluator_from_spec(spec)
    mine, theirs = evaluator.init_parameters(), reference.init_parameters()
    options = {name: value for name, value in mine.items() if value != theirs.get(name)}
    for name, value in options.items():
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            raise NotImplementedError(f"{type(evaluator).__name__}({name}={type(value).__name__}) cannot be saved: "
                                      f"only plain values are; pass the evaluator instance again after loading"
                                      ) from None
    return options


_SHARED: dict[str, RetrievalEvaluator] = {}
_SHARED_LOCK = threading.Lock()


def shared_evaluator(spec: str, options: Mapping[str, Any] | None = None) -> RetrievalEvaluator:
    """One evaluator per spec and options in this process: every component or corrector naming the same
    model shares one instance, so the model is loaded once (also after a pipeline is loaded from YAML).
    Evaluators score without per-call state, so sharing is safe; LLM judges are never shared."""
    key = spec if not options else f"{spec} {json.dumps(dict(options), sort_keys=True)}"
    with _SHARED_LOCK:
        evaluator = _SHARED.get(key)
        if evaluator is None:
            evaluator = _SHARED[key] = evaluator_from_spec(spec, **(options or {}))
        return evaluator


def _must_exist(spec: str, target: str) -> None:
    local = target.startswith(("/", "./", "../", "~", ".\\")) or Path(target).is_absolute() or target.count("/") > 1
    if local and not Path(target).expanduser().exists():
        raise ValueError(f"evaluator spec {spec!r}: no such file or directory {target!r}")
