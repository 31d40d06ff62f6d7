"""crag-llamaindex: Corrective RAG for LlamaIndex, as a thin adapter over crag_shared.

- `CRAGPostprocessor`: add to any query engine's `node_postprocessors` (a reranker: sorted, `top_n`);
- `CRAGQueryEngine`: retrieve → CRAG → synthesize, with CRAG's verdict in `response.metadata["crag"]`;
- `WebSearchRetriever`: web knowledge (rewrite → search → fetch → select) as a retriever;
- `CRAGWorkflow`: the same algorithm as a Workflow, one typed event per step, nestable in yours;
- `CRAGQueryEngineTool`: a CRAG engine as an agent's tool, its result led by CRAG's verdict;
- `CRAGVerdicts`, `AbstentionAware`: sub-question engines and routers over CRAG engines keep each verdict
  and never summarize abstentions into an answer;
- `calibrate`: the thresholds fitted on your index from questions and their answers;

The same names import from `llama_index.postprocessor.crag`, LlamaIndex's integration naming.
"""

from .calibrate import calibrate
from .compose import AbstentionAware, CRAGVerdicts
from .embedding import embedding_evaluator
from .instrumentation import CRAGActionEvent, CRAGFallbackEvent, CRAGWebSearchEvent
from .llm import LlamaIndexLLM
from .postprocessor import CRAGPostprocessor
from .query_engine import CRAGQueryEngine
from .retriever import WebSearchRetriever
from .tool import CRAGQueryEngineTool
from .workflow import (
    CRAGStartEvent,
    CRAGWorkflow,
    JudgedEvent,
    KnowledgeEvent,
    RefineEvent,
    RetrievedEvent,
    SearchNeededEvent,
)

__all__ = [
    "AbstentionAware",
    "CRAGActionEvent",
    "CRAGFallbackEvent",
    "CRAGPostprocessor",
    "CRAGQueryEngine",
    "CRAGQueryEngineTool",
    "CRAGStartEvent",
    "CRAGVerdicts",
    "CRAGWebSearchEvent",
    "CRAGWorkflow",
    "JudgedEvent",
    "KnowledgeEvent",
    "LlamaIndexLLM",
    "RefineEvent",
    "RetrievedEvent",
    "SearchNeededEvent",
    "WebSearchRetriever",
    "calibrate",
    "embedding_evaluator",
]
