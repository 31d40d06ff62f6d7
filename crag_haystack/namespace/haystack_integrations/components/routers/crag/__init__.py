"""crag's routers for Haystack at their canonical, allowlisted home:
`haystack_integrations.components.routers.crag`.

Pipelines save these classes under this path, so Haystack 3 loads them with its default allowlist.
"""

from crag_haystack import KnowledgeGate, RetrievalRouter

__all__ = ["KnowledgeGate", "RetrievalRouter"]
