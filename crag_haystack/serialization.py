"""to_dict/from_dict helpers for components that hold other components (generators, web search)."""

from __future__ import annotations

from typing import Any

from haystack.core.serialization import component_from_dict, import_class_by_name


def nested_to_dict(value: Any) -> dict[str, Any] | None:
    return value.to_dict() if value is not None else None


def nested_from_dict_inplace(init_parameters: dict[str, Any], key: str) -> None:
    """Rebuild a nested component from its `{"type": ..., "init_parameters": ...}` form (Haystack 2 and 3)."""
    value = init_parameters.get(key)
    if isinstance(value, dict) and "type" in value:
        init_parameters[key] = component_from_dict(import_class_by_name(value["type"]), value, key)
