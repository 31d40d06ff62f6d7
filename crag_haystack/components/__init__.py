"""Haystack components of crag, one per file."""
from .component_web_search import ComponentWebSearch
from .corrective_retriever import CorrectiveRetriever
from .corrective_web_search import CorrectiveWebSearch, web_refiner
from .crag import CRAG
from .knowledge_gate import KnowledgeGate
from .knowledge_refiner import KnowledgeRefiner
from .no_answer_reply import NoAnswerReply
from .retrieval_router import RetrievalRouter
from .search_query_rewriter import SearchQueryRewriter
from .web_search import ProviderWebSearch, ReplayWebSearch, SerpAPIWebSearch

__all__ = [
           "CRAG",
           "ComponentWebSearch",
           "CorrectiveRetriever",
           "CorrectiveWebSearch",
           "KnowledgeGate",
           "KnowledgeRefiner",
           "NoAnswerReply",
           "ProviderWebSearch",
           "ReplayWebSearch",
           "RetrievalRouter",
           "SearchQueryRewriter",
           "SerpAPIWebSearch",
           "web_refiner",
]
