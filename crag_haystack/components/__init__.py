"""Haystack components of crag, one per file."""

from .crag import CRAG
from .knowledge_refiner import KnowledgeRefiner
from .query_rewriter import QueryRewriter
from .retrieval_evaluator import RetrievalEvaluator
from .web_search import RecordedWebSearch, SerpAPIWebSearch

__all__ = ["CRAG", "KnowledgeRefiner", "QueryRewriter", "RecordedWebSearch", "RetrievalEvaluator",
           "SerpAPIWebSearch"]
