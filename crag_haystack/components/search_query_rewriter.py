"""SearchQueryRewriter: a question → at most three search keywords, with any Haystack chat generator."""

from typing import Any

from haystack import component, default_to_dict

from crag_shared.adapter import PAPER_REWRITE_PROMPT, QueryRewriter, Rewrite

from ..integration import QUERY, keep_earlier_type_string
from ..lifecycle import Lifecycle
from ..llm import ChatGenerator, as_llm, warm_up_all
from ..logs import logger
from ..serialization import from_dict_with_nested, nested_to_dicts


@component
class SearchQueryRewriter(Lifecycle):
    """The paper's few-shot keyword rewrite (Appendix A, Table 5) through `chat_generator`.

    Without a generator, keywords are extracted offline (the documented default). When the generator
    fails or answers nothing usable (empty, too long, one word over and over), the offline keywords are
    used and the reason is logged and returned in `note`; `method` says which ("llm" or "keywords").

    Usage:

    ```python
    rewriter = SearchQueryRewriter(chat_generator=OpenAIChatGenerator())   # or none: offline keywords
    rewriter.run(query="Who designed the Sydney Harbour Bridge?")["search_query"]
    ```
    """

    __module__ = QUERY  # its canonical, allowlisted home (see crag_haystack.integration)

    def __init__(self, chat_generator: ChatGenerator | None = None, template: str = PAPER_REWRITE_PROMPT,
                 max_keywords: int = 3, language: str = "en") -> None:
        """
        :param chat_generator: a Haystack chat generator; without one, offline keyword extraction.
        :param template: the rewrite prompt, with a `{question}` slot.
        :param max_keywords: at most this many comma-separated keywords.
        :param language: the question's language for the offline keywords (ISO 639-1, or "auto").
        """
        self.chat_generator = chat_generator
        self.template = template
        self.max_keywords = max_keywords
        self.language = language
        self._rewriter = QueryRewriter(as_llm(chat_generator), template=template, max_keywords=max_keywords,
                                       language=language)

    def warm_up(self) -> None:
        """Warm up the chat generator."""
        warm_up_all(self.chat_generator)

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component (Haystack's `to_dict` contract; secrets as env var names only)."""
        return default_to_dict(self, **nested_to_dicts(self, ("chat_generator",)), template=self.template,
                               max_keywords=self.max_keywords, language=self.language)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SearchQueryRewriter":
        """Rebuild the component from `to_dict`'s output."""
        return from_dict_with_nested(cls, data, ("chat_generator",))

    @staticmethod
    def _outputs(rewrite: Rewrite) -> dict[str, Any]:
        if rewrite.note:
            logger.warning("SearchQueryRewriter: CRAG fallback in rewrite: {reason} -> offline keywords",
                           reason=rewrite.note)
        return {"search_query": rewrite.query, "method": rewrite.method, "note": rewrite.note or ""}

    @component.output_types(search_query=str, method=str, note=str)
    def run(self, query: str) -> dict[str, Any]:
        """
        :param query: the question to rewrite.
        :returns: `search_query` (the keywords), `method` ("llm" or "keywords") and `note` (why the offline
            keywords were used, when the LLM failed; else empty).
        """
        return self._outputs(self._rewriter.rewrite(query))

    @component.output_types(search_query=str, method=str, note=str)
    async def run_async(self, query: str) -> dict[str, Any]:
        """Async `run`.

        :param query: the question to rewrite.
        :returns: as `run`.
        """
        return self._outputs(await self._rewriter.arewrite(query))


keep_earlier_type_string(SearchQueryRewriter, "search_query_rewriter")
