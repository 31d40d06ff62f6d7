"""Haystack components of crag, one per file."""
from .crag import CRAG
from .knowledge_refiner import KnowledgeRefiner
from .retrieval_router import RetrievalRouter
from .search_query_rewriter import SearchQueryRewriter
from .web_search import ReplayWebSearch, SerpAPIWebSearch

__all__ = [
           "CRAG",
           "KnowledgeRefiner",
           "ReplayWebSearch",
           "RetrievalRouter",
           "SearchQueryRewriter",
           "SerpAPIWebSearch",
]
