"""crag's generators for Haystack at their canonical, allowlisted home:
`haystack_integrations.components.generators.crag`.

Pipelines save these classes under this path, so Haystack 3 loads them with its default allowlist.
"""

from crag_haystack import RecordedChatGenerator

__all__ = ["RecordedChatGenerator"]
