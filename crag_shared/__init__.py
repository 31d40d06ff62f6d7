"""crag_shared: Corrective Retrieval-Augmented Generation (Yan et al. 2024) as a framework-free core.

`Corrector` runs the paper's Algorithm 1 on a query and its retrieved passages; the framework adapters
(crag_llamaindex, crag_haystack) translate their nodes and documents to `Passage` and back.
"""

from .config import CRAGConfig
from .corrector import Corrector
from .evaluators import (
    CombinedEvaluator,
    CrossEncoderEvaluator,
    EmbeddingEvaluator,
    Evaluation,
    EvaluatorConfigurationError,
    LexicalEvaluator,
    LLMEvaluator,
    OnnxCrossEncoderEvaluator,
    OnnxEmbeddingEvaluator,
    RetrievalEvaluator,
    T5Evaluator,
    evaluator_from_spec,
    evaluator_spec,
    load_combination,
    save_combination,
)
from .llm import LLM, FunctionLLM
from .policy import ActionPolicy
from .refine import StripRefiner
from .rewrite import QueryRewriter
from .types import (
    Action,
    CorrectionResult,
    FailedCorrection,
    Judgment,
    Origin,
    Passage,
    Refinement,
    Strip,
    Trace,
    WebOutcome,
    WebResult,
    WebSearchResponse,
)
from .web import InMemorySearch, ReplaySearch, WebPage, WebSearch, WebSearchError

__version__ = "0.2.0"

_LAZY_WEB = ("PageFetcher", "SerpAPISearch", "SerperSearch", "SearXNGSearch", "BraveSearch", "TavilySearch",
             "ExaSearch", "DDGSSearch", "FunctionSearch")


def __getattr__(name: str):
    """Network providers load on first use (they import httpx), keeping `import crag_shared` fast."""
    if name in _LAZY_WEB:
        from . import web

        return getattr(web, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "LLM",
    "Action",
    "ActionPolicy",
    "BraveSearch",
    "CRAGConfig",
    "CombinedEvaluator",
    "CorrectionResult",
    "Corrector",
    "CrossEncoderEvaluator",
    "DDGSSearch",
    "EmbeddingEvaluator",
    "Evaluation",
    "EvaluatorConfigurationError",
    "ExaSearch",
    "FailedCorrection",
    "FunctionLLM",
    "FunctionSearch",
    "InMemorySearch",
    "Judgment",
    "LLMEvaluator",
    "LexicalEvaluator",
    "OnnxCrossEncoderEvaluator",
    "OnnxEmbeddingEvaluator",
    "Origin",
    "PageFetcher",
    "Passage",
    "QueryRewriter",
    "Refinement",
    "ReplaySearch",
    "RetrievalEvaluator",
    "SearXNGSearch",
    "SerpAPISearch",
    "SerperSearch",
    "Strip",
    "StripRefiner",
    "T5Evaluator",
    "TavilySearch",
    "Trace",
    "WebOutcome",
    "WebPage",
    "WebResult",
    "WebSearch",
    "WebSearchError",
    "WebSearchResponse",
    "__version__",
    "evaluator_from_spec",
    "evaluator_spec",
    "load_combination",
    "save_combination",
]
