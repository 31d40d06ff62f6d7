"""Where each component lives for Haystack: `haystack_integrations.components.<kind>.crag`.

Haystack 3 loads pipelines only from trusted modules, `haystack_integrations` among them, and community
integrations live there by convention. Each component's canonical module (its `__module__`, so the type
string `to_dict` writes) is one of these; the crag-haystack wheel installs them as namespace portions that
re-export the classes, and `crag_haystack` keeps today's imports. Type strings saved before,
`crag_haystack.components.<file>.<Class>`, stay registered too (on Haystack 3 they need
`allowed_modules=["crag_haystack"]`, or a save with this version).
"""

from haystack import component

RANKERS = "haystack_integrations.components.rankers.crag"
ROUTERS = "haystack_integrations.components.routers.crag"
WEBSEARCH = "haystack_integrations.components.websearch.crag"
QUERY = "haystack_integrations.components.query.crag"
BUILDERS = "haystack_integrations.components.builders.crag"
RETRIEVERS = "haystack_integrations.components.retrievers.crag"
GENERATORS = "haystack_integrations.components.generators.crag"


def keep_earlier_type_string(cls: type, file: str) -> None:
    """Register `cls` under the type string pipelines saved before it moved (`crag_haystack.components.FILE`)."""
    component.registry.setdefault(f"crag_haystack.components.{file}.{cls.__name__}", cls)
