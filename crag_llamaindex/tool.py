"""CRAGQueryEngineTool: a CRAG query engine as an agent's tool, whose result carries CRAG's verdict."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.response.schema import RESPONSE_TYPE
from llama_index.core.schema import QueryBundle
from llama_index.core.tools import QueryEngineTool, ToolMetadata, ToolOutput

from crag_shared.adapter import result_tool_text, verdict_line

from .query_engine import CRAGQueryEngine

__all__ = ["CRAGQueryEngineTool"]

DEFAULT_DESCRIPTION = ("Search the knowledge base. The result starts with CRAG's verdict on what was found; "
                       "when it says no reliable knowledge was found, say so instead of guessing.")


class CRAGQueryEngineTool(QueryEngineTool):
    """A `QueryEngineTool` over a `CRAGQueryEngine` for `FunctionAgent`, `ReActAgent` and `AgentWorkflow`.

    A plain `QueryEngineTool` hands the agent `str(response)`: an answer, or the no-knowledge answer with no
    reason. This tool hands it CRAG's verdict line (the action, the best score against the thresholds, or
    why there is no knowledge) and then the answer; with `knowledge_only=True`, the knowledge strips instead
    of an answer (no synthesis: the agent's LLM answers from them, one LLM call fewer). The verdict is a
    few hundred bytes; the full response (`metadata["crag"]`, source nodes) or `CorrectionResult` is the
    tool output's `raw_output`, for your code, not for the LLM.

    Usage:
    ```python
    tool = CRAGQueryEngineTool.from_defaults(CRAGQueryEngine.from_index(index), name="search_knowledge")
    agent = FunctionAgent(tools=[tool], llm=llm)
    ```
    """

    def __init__(self, query_engine: CRAGQueryEngine, metadata: ToolMetadata, *, knowledge_only: bool = False,
                 resolve_input_errors: bool = True) -> None:
        if not isinstance(query_engine, CRAGQueryEngine):
            raise TypeError(f"query_engine must be a CRAGQueryEngine, got {type(query_engine).__name__}")
        super().__init__(query_engine, metadata, resolve_input_errors=resolve_input_errors)
        self.knowledge_only = knowledge_only

    @classmethod
    def from_defaults(cls, query_engine: CRAGQueryEngine, name: str | None = None,  # type: ignore[override]
                      description: str | None = None, return_direct: bool = False,
                      resolve_input_errors: bool = True, *, knowledge_only: bool = False) -> CRAGQueryEngineTool:
        """As `QueryEngineTool.from_defaults`, with a description that tells the agent how to read the verdict."""
        metadata = ToolMetadata(name=name or "search_knowledge", description=description or DEFAULT_DESCRIPTION,
                                return_direct=return_direct)
        return cls(query_engine, metadata, knowledge_only=knowledge_only, resolve_input_errors=resolve_input_errors)

    @property
    def engine(self) -> CRAGQueryEngine:
        """The CRAG query engine this tool queries."""
        engine = self.query_engine
        assert isinstance(engine, CRAGQueryEngine)
        return engine

    def _output(self, query: str, content: str, raw: Any) -> ToolOutput:
        return ToolOutput(content=content, tool_name=self.metadata.get_name(), raw_input={"input": query},
                          raw_output=raw)

    def call(self, *args: Any, **kwargs: Any) -> ToolOutput:
        """The verdict and the answer (or the knowledge)."""
        query = self._get_query_str(*args, **kwargs)
        if self.knowledge_only:
            bundle = QueryBundle(query)
            _, result = self.engine.crag.correct(self.engine.retrieved(bundle), bundle)
            return self._output(query, result_tool_text(result), result)
        response = self.engine.query(query)
        return self._output(query, _answer_text(response), response)

    async def acall(self, *args: Any, **kwargs: Any) -> ToolOutput:
        """Async `call`."""
        query = self._get_query_str(*args, **kwargs)
        if self.knowledge_only:
            bundle = QueryBundle(query)
            _, result = await self.engine.crag.acorrect(await self.engine.aretrieved(bundle), bundle)
            return self._output(query, result_tool_text(result), result)
        response = await self.engine.aquery(query)
        return self._output(query, _answer_text(response), response)


def _answer_text(response: RESPONSE_TYPE) -> str:
    """The verdict line, then the answer (the engine puts its verdict in every response's metadata)."""
    return f"{verdict_line((response.metadata or {})['crag'])}\n{response}"
