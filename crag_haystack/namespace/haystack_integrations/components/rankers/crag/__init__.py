"""crag's rankers for Haystack at their canonical, allowlisted home:
`haystack_integrations.components.rankers.crag`.

Pipelines save these classes under this path, so Haystack 3 loads them with its default allowlist.
"""

from crag_haystack import CRAG, KnowledgeRefiner
from crag_haystack.report import CRAGReport

__all__ = ["CRAG", "CRAGReport", "KnowledgeRefiner"]
