"""to_dict/from_dict helpers for components that hold other components (generators, web search).

Haystack's own `component_to_dict` / `component_from_dict` do the work, so a nested component without
`to_dict` (a user's generator) serializes the way Haystack serializes it inside a pipeline.
"""

from typing import Any

from haystack.core.serialization import component_from_dict, component_to_dict, import_class_by_name

__all__ = ["MODEL_PARTS", "current_type", "from_dict_with_nested", "nested_to_dicts"]

#: The nested components every scoring component takes: an LLM judge's generator, and the embedders that
#: evaluator="embedding" uses.
MODEL_PARTS = ("chat_generator", "text_embedder", "document_embedder")


def nested_to_dict(value: Any, name: str) -> dict[str, Any] | None:
    """A nested component or generator as Haystack serializes it, or None."""
    return component_to_dict(value, name) if value is not None else None


def nested_to_dicts(component: Any, names: tuple[str, ...]) -> dict[str, dict[str, Any] | None]:
    """The serialized form of each nested component `names` on `component`, keyed by name."""
    return {name: nested_to_dict(getattr(component, name), name) for name in names}


def current_type(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    """`data` with its type string as `cls` writes it now: a string saved before a component moved to its
    canonical home (`crag_haystack.integration`) names the same class, and Haystack's `default_from_dict`
    compares the strings."""
    return {**data, "type": f"{cls.__module__}.{cls.__name__}"}


def from_dict_with_nested(cls: type, data: dict[str, Any], names: tuple[str, ...]) -> Any:
    """`cls` rebuilt from `to_dict` output, with its nested components `names` rebuilt first."""
    for key in names:
        nested_from_dict_inplace(data["init_parameters"], key)
    return cls(**data["init_parameters"])


def nested_from_dict_inplace(init_parameters: dict[str, Any], key: str) -> None:
    """Rebuild a nested component from its `{"type": ..., "init_parameters": ...}` form (Haystack 2 and 3)."""
    value = init_parameters.get(key)
    if isinstance(value, dict) and "type" in value:
        cls = import_class_by_name(value["type"])
        init_parameters[key] = component_from_dict(cls, current_type(cls, value), key)
