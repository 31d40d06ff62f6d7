"""crag's retrievers for Haystack at their canonical, allowlisted home:
`haystack_integrations.components.retrievers.crag`.

Pipelines save these classes under this path, so Haystack 3 loads them with its default allowlist.
"""

from crag_haystack import CorrectiveRetriever

__all__ = ["CorrectiveRetriever"]
