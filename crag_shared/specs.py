"""One grammar for the short strings that name a part, "KIND" or "KIND:TARGET": one table per family
(evaluators, web searches) that both reads a spec into a part and writes a part back as its spec, so the
two directions cannot drift, and the grammar shown in errors, help texts and docs comes from the table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

T = TypeVar("T")
Target = Literal["none", "required", "optional"]


@dataclass(frozen=True)
class Kind(Generic[T]):
    """One kind of spec.

    :param name: the kind as written, e.g. "cross-encoder".
    :param target: whether ":TARGET" is absent ("none"), needed ("required") or may follow ("optional").
    :param build: `build(target, **context)` makes the part; `target` is "" when there is none.
    :param writes: the class whose instances this kind writes (exactly that class: a subclass may hold
        more than the spec can say, so it is not written as its parent).
    :param target_of: the target a part is written with ("" for none); None if the kind is read-only.
    :param accepts: for kinds sharing a class, whether this kind writes a given part.
    :param aliases: other names read as this kind.
    :param placeholder: what the target is, for the grammar ("PATH", "MODE"...).
    """

    name: str
    target: Target
    build: Callable[..., T]
    writes: type | None = None
    # called only with instances of exactly `writes`, which a Kind[T] cannot express: typed at their lambdas
    target_of: Callable[[Any], str] | None = None
    accepts: Callable[[Any], bool] | None = None
    aliases: tuple[str, ...] = ()
    placeholder: str = "PATH"

    @property
    def grammar(self) -> str:
        """The kind as users write it, e.g. `t5:PATH_OR_ID` or `llm[:per_document]`."""
        return {"none": self.name, "required": f"{self.name}:{self.placeholder}",
                "optional": f"{self.name}[:{self.placeholder}]"}[self.target]


class SpecTable(Generic[T]):
    """Reads and writes the specs of one family of parts."""

    def __init__(self, family: str, kinds: Sequence[Kind[T]]) -> None:
        self.family = family
        self.kinds = tuple(kinds)
        self._by_name = {name: kind for kind in self.kinds for name in (kind.name, *kind.aliases)}

    def register(self, kind: Kind[T], *, before: str | None = None) -> None:
        """Add a kind (before the kind named `before`, else last): a family member that builds on the table
        itself, as the LLM judge builds its offline partner from a spec, registers from its own module."""
        if kind.name in self._by_name:
            raise ValueError(f"{self.family} spec kind {kind.name!r} is already registered")
        kinds = list(self.kinds)
        at = next((i for i, k in enumerate(kinds) if k.name == before), len(kinds))
        self.kinds = (*kinds[:at], kind, *kinds[at:])
        self._by_name.update({name: kind for name in (kind.name, *kind.aliases)})

    def grammar(self) -> list[str]:
        """Every kind as written, e.g. ["lexical", "t5:PATH_OR_ID", "llm[:per_document]"]."""
        return [kind.grammar for kind in self.kinds]

    def parse(self, spec: object) -> tuple[Kind[T], str]:
        """The kind and the target of `spec`; a malformed spec raises ValueError naming the grammar."""
        if not isinstance(spec, str):
            raise TypeError(f"{self.family} spec must be a string, got {type(spec).__name__}")
        name, colon, target = spec.partition(":")
        name, target = name.strip().lower(), target.strip()
        kind = self._by_name.get(name)
        if kind is None:
            raise ValueError(f"unknown {self.family} spec {spec!r}: use {', '.join(self.grammar())}")
        if kind.target == "none" and (colon or target):
            raise ValueError(f"{self.family} spec {spec!r}: {kind.name} takes no target")
        if kind.target == "required" and not target:
            raise ValueError(f"{self.family} spec {spec!r} needs a target: {kind.grammar}")
        return kind, target

    def build(self, spec: object, **context: Any) -> T:
        """The part `spec` names; `context` goes to the kind's builder."""
        kind, target = self.parse(spec)
        return kind.build(target, **context)

    def write(self, part: T) -> str:
        """The spec that `build` turns back into an equal part; NotImplementedError names a part no spec
        can describe (a class of your own, a subclass)."""
        for kind in self.kinds:
            if kind.writes is type(part) and kind.target_of is not None and (kind.accepts is None
                                                                              or kind.accepts(part)):
                target = kind.target_of(part)
                if kind.target == "required" and not target:
                    raise NotImplementedError(f"{type(part).__name__} has no {kind.placeholder} to write in its "
                                              f"spec ({kind.grammar})")
                return f"{kind.name}:{target}" if target else kind.name
        raise NotImplementedError(f"{type(part).__name__} cannot be described by a {self.family} spec "
                                  f"({', '.join(self.grammar())})")
