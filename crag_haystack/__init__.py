"""crag-haystack: Corrective RAG for Haystack pipelines, as a thin adapter over crag_shared.

Importing this package adds `crag_haystack` to Haystack 3's deserialization allowlist, so pipelines
containing these components load from YAML (`Pipeline.loads`) once `import crag_haystack` has run.
Without the import, allow it yourself: `HAYSTACK_DESERIALIZATION_ALLOWLIST="crag_haystack.*"` or
`Pipeline.loads(yaml, allowed_modules=["crag_haystack"])`.
"""

from .components import (
    CRAG,
    KnowledgeGate,
    KnowledgeRefiner,
    NoAnswerReply,
    ReplayWebSearch,
    RetrievalRouter,
    SearchQueryRewriter,
    SerpAPIWebSearch,
)
from .embedding import embedding_evaluator
from .llm import HaystackChatLLM
from .pipeline import build_crag_pipeline

try:  # Haystack 3.x: trust our own module for deserialization (2.x has no allowlist)
    from haystack.core.serialization import allow_deserialization_module
except ImportError:  # pragma: no cover - Haystack 2.x
    pass
else:
    allow_deserialization_module("crag_haystack")

__all__ = [
    "CRAG",
    "HaystackChatLLM",
    "KnowledgeGate",
    "KnowledgeRefiner",
    "NoAnswerReply",
    "ReplayWebSearch",
    "RetrievalRouter",
    "SearchQueryRewriter",
    "SerpAPIWebSearch",
    "build_crag_pipeline",
    "embedding_evaluator",
]
