"""crag-haystack: Corrective RAG for Haystack pipelines, as a thin adapter over crag_shared.

Each component's canonical home is `haystack_integrations.components.<kind>.crag` (see
`crag_haystack.integration`), which Haystack 3 trusts by default: saved pipelines load in a fresh process
with no allowlist setting and no prior import. Importing this package changes no process-wide setting.
"""

from .components import (
    CRAG,
    ComponentWebSearch,
    CorrectiveRetriever,
    KnowledgeGate,
    KnowledgeRefiner,
    NoAnswerReply,
    ProviderWebSearch,
    ReplayWebSearch,
    RetrievalRouter,
    SearchQueryRewriter,
    SerpAPIWebSearch,
    knowledge_text,
)
from .embedding import embedding_evaluator
from .llm import HaystackChatLLM
from .pipeline import build_crag_pipeline

__all__ = [
    "CRAG",
    "ComponentWebSearch",
    "CorrectiveRetriever",
    "HaystackChatLLM",
    "KnowledgeGate",
    "KnowledgeRefiner",
    "NoAnswerReply",
    "ProviderWebSearch",
    "ReplayWebSearch",
    "RetrievalRouter",
    "SearchQueryRewriter",
    "SerpAPIWebSearch",
    "build_crag_pipeline",
    "embedding_evaluator",
    "knowledge_text",
]
