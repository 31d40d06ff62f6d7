"""to_dict/from_dict helpers for components that hold other components (generators, web search).

Haystack's own `component_to_dict` / `component_from_dict` do the work, so a nested component without
`to_dict` (a user's generator) serializes the way Haystack serializes it inside a pipeline.
"""

from typing import Any

from haystack.core.serialization import component_from_dict, component_to_dict, import_class_by_name


def nested_to_dict(value: Any, name: str) -> dict[str, Any] | None:
    return component_to_dict(value, name) if value is not None else None


def nested_from_dict_inplace(init_parameters: dict[str, Any], key: str) -> None:
    """Rebuild a nested component from its `{"type": ..., "init_parameters": ...}` form (Haystack 2 and 3)."""
    value = init_parameters.get(key)
    if isinstance(value, dict) and "type" in value:
        init_parameters[key] = component_from_dict(import_class_by_name(value["type"]), value, key)
