"""CorrectiveRetriever: your retriever and CRAG as one component (a Haystack SuperComponent), query in,
corrected knowledge out: a drop-in retriever, and a tool for Haystack's Agent."""

from typing import Any

from haystack import Pipeline, default_to_dict, super_component

from ..integration import RETRIEVERS
from ..serialization import from_dict_with_nested, nested_to_dicts
from .crag import CRAG


@super_component
class CorrectiveRetriever:
    """Retrieves with your retriever, then runs CRAG on what it found (a `@super_component`).

    Input: `query`. Outputs: `documents` (the knowledge strips, web strips included) or `abstention` (why
    there is none), `action`, `scores` and `crag` (the `CRAGReport`). The `crag` argument is the `CRAG`
    component inside (pass one configured with your evaluator, web search and settings); its settings and
    your retriever are saved with it.

    Usage:
    ```python
    from haystack.tools import ComponentTool

    search = CorrectiveRetriever(InMemoryBM25Retriever(store, top_k=10))
    search.run(query="Who designed the Sydney Harbour Bridge?")["documents"]
    tool = ComponentTool(component=search, name="search_knowledge", outputs_to_string={"handler": knowledge_text},
                         description="Search the knowledge base; answers only from what CRAG judged relevant.")
    ```
    """

    __module__ = RETRIEVERS  # its canonical, allowlisted home (see crag_haystack.integration)

    def __init__(self, retriever: Any, crag: CRAG | None = None) -> None:
        """
        :param retriever: any Haystack retriever taking `query` and returning `documents`.
        :param crag: the CRAG component to run (default: `CRAG()`, lexical, no web search).
        """
        if crag is not None and not isinstance(crag, CRAG):
            raise TypeError(f"crag must be a crag_haystack CRAG component, got {type(crag).__name__}")
        self.retriever = retriever
        self.crag = crag or CRAG()
        self.pipeline = Pipeline()
        self.pipeline.add_component("retriever", retriever)
        self.pipeline.add_component("crag", self.crag)
        self.pipeline.connect("retriever.documents", "crag.documents")
        self.input_mapping = {"query": ["retriever.query", "crag.query"]}
        self.output_mapping = {"crag.documents": "documents", "crag.abstention": "abstention",
                               "crag.action": "action", "crag.scores": "scores", "crag.crag": "crag"}

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component: the retriever and the CRAG component, nested."""
        return default_to_dict(self, **nested_to_dicts(self, ('retriever', 'crag')))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CorrectiveRetriever":
        """Rebuild the component from `to_dict`'s output."""
        return from_dict_with_nested(cls, data, ('retriever', 'crag'))
