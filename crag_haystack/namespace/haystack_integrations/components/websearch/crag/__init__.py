"""crag's websearch for Haystack at their canonical, allowlisted home:
`haystack_integrations.components.websearch.crag`.

Pipelines save these classes under this path, so Haystack 3 loads them with its default allowlist.
"""

from crag_haystack import ComponentWebSearch, CorrectiveWebSearch, ProviderWebSearch, ReplayWebSearch, SerpAPIWebSearch

__all__ = ["ComponentWebSearch", "CorrectiveWebSearch", "ProviderWebSearch", "ReplayWebSearch", "SerpAPIWebSearch"]
