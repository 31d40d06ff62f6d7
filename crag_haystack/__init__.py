"""crag-haystack: Corrective RAG for Haystack pipelines, as a thin adapter over crag_shared.

Each component's canonical home is `haystack_integrations.components.<kind>.crag` (see
`crag_haystack.integration`), which Haystack 3 trusts by default: saved pipelines load in a fresh process
with no allowlist setting and no prior import. Importing this package changes no process-wide setting.
"""

from .calibrate import calibrate
from .components import (
    CRAG,
    ComponentWebSearch,
    CorrectiveRetriever,
    CorrectiveWebSearch,
    KnowledgeGate,
    KnowledgeRefiner,
    NoAnswerReply,
    ProviderWebSearch,
    ReplayWebSearch,
    RetrievalRouter,
    SearchQueryRewriter,
    SerpAPIWebSearch,
    web_refiner,
)
from .embedding import embedding_evaluator
from .llm import HaystackChatLLM
from .pipeline import build_crag_pipeline
from .recorded import RecordedChatGenerator
from .tools import knowledge_text

__all__ = [
    "CRAG",
    "ComponentWebSearch",
    "CorrectiveRetriever",
    "CorrectiveWebSearch",
    "HaystackChatLLM",
    "KnowledgeGate",
    "KnowledgeRefiner",
    "NoAnswerReply",
    "ProviderWebSearch",
    "RecordedChatGenerator",
    "ReplayWebSearch",
    "RetrievalRouter",
    "SearchQueryRewriter",
    "SerpAPIWebSearch",
    "build_crag_pipeline",
    "calibrate",
    "embedding_evaluator",
    "knowledge_text",
    "web_refiner",
]
