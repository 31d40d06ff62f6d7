"""crag-llamaindex: Corrective RAG for LlamaIndex, as a thin adapter over crag_shared.

- `CRAGPostprocessor`: add to any query engine's `node_postprocessors`;
- `CRAGQueryEngine`: retrieve → CRAG → synthesize, with CRAG's verdict in `response.metadata["crag"]`;
- `WebSearchRetriever`: web knowledge (rewrite → search → fetch → select) as a retriever.
"""

from .events import CRAGActionEvent, CRAGFallbackEvent, CRAGWebSearchEvent
from .llm import LlamaIndexLLM
from .postprocessor import CRAGPostprocessor
from .query_engine import CRAGQueryEngine
from .retriever import WebSearchRetriever

__all__ = ["CRAGActionEvent", "CRAGFallbackEvent", "CRAGPostprocessor", "CRAGQueryEngine", "CRAGWebSearchEvent",
           "LlamaIndexLLM", "WebSearchRetriever"]
