"""CRAGWorkflow: Algorithm 1 as a LlamaIndex Workflow, each step a typed event, over the Corrector's slices.

retrieve -> evaluate -> decide -> (web_search) -> refine -> synthesize. The steps call the same
`judge` / `search` / `finish` slices that `Corrector.correct` is made of, so a question gets the same
action, scores and knowledge here as through `CRAGPostprocessor` or `CRAGQueryEngine`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.response_synthesizers import BaseSynthesizer
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.workflow import Context, Event, StartEvent, StopEvent, Workflow, step

from crag_shared.adapter import NO_KNOWLEDGE_ANSWER, Action, CorrectionResult, Judgment, WebOutcome

from .convert import to_passage
from .postprocessor import CRAGPostprocessor
from .query_engine import CRAGQueryEngine, OnAbstain


class RetrievedEvent(Event):
    """The retriever's nodes for the query."""

    query: str
    nodes: list[NodeWithScore]


class JudgedEvent(Event):
    """Every node scored, and the action (Correct / Incorrect / Ambiguous)."""

    query: str
    nodes: list[NodeWithScore]
    judgment: Judgment


class SearchNeededEvent(Event):
    """Incorrect or Ambiguous: the question goes to the web."""

    query: str
    nodes: list[NodeWithScore]
    judgment: Judgment


class RefineEvent(Event):
    """What refinement works on: the judged nodes and, unless Correct, the web outcome."""

    query: str
    nodes: list[NodeWithScore]
    judgment: Judgment
    web: WebOutcome | None = None


class KnowledgeEvent(Event):
    """The refined knowledge as nodes, and the full correction (action, scores, trace)."""

    query: str
    knowledge: list[NodeWithScore]
    result: CorrectionResult


class CRAGWorkflow(Workflow):
    """Corrective RAG as a Workflow over any retriever (or index), any LLM, crag's evaluators and web search.

        workflow = CRAGWorkflow(index=index, web_search=SerpAPISearch(), llm=llm)
        response = await workflow.run(query="Who designed the Sydney Harbour Bridge?")
        response.metadata["crag"]        # action, scores, web URLs, strips, fallbacks, trace

    Each step's event is also written to the stream (`handler.stream_events()`); `streaming=True` makes
    the final result a streaming response. CRAG settings are `CRAGPostprocessor` keywords, or pass
    `crag=` / `response_synthesizer=` yourself. When CRAG abstains, the answer is `no_knowledge_answer` and
    the LLM is not called, unless `on_abstain="llm"` (see `CRAGQueryEngine`). An empty query is not
    retrieved nor judged: CRAG abstains on it.
    """

    def __init__(self, retriever: BaseRetriever | None = None, *, index: Any | None = None,
                 similarity_top_k: int = 10, crag: CRAGPostprocessor | None = None, llm: Any | None = None,
                 response_synthesizer: BaseSynthesizer | None = None, streaming: bool = False,
                 no_knowledge_answer: str = NO_KNOWLEDGE_ANSWER, on_abstain: OnAbstain = "answer",
                 no_context_prompt: Any | None = None, node_postprocessors: Sequence[BaseNodePostprocessor] = (),
                 timeout: float | None = 120.0, verbose: bool = False, num_concurrent_runs: int | None = None,
                 **crag_settings: Any) -> None:
        if (retriever is None) == (index is None):
            raise ValueError("pass either retriever=... or index=...")
        super().__init__(timeout=timeout, verbose=verbose, num_concurrent_runs=num_concurrent_runs)
        retriever = retriever or index.as_retriever(similarity_top_k=similarity_top_k)
        self.engine = CRAGQueryEngine(retriever, crag=crag, response_synthesizer=response_synthesizer, llm=llm,
                                      streaming=streaming, no_knowledge_answer=no_knowledge_answer,
                                      on_abstain=on_abstain, no_context_prompt=no_context_prompt,
                                      node_postprocessors=node_postprocessors, **crag_settings)

    @property
    def crag(self) -> CRAGPostprocessor:
        """The `CRAGPostprocessor` the workflow's steps use."""
        return self.engine.crag

    @step
    async def retrieve(self, ctx: Context, ev: StartEvent) -> RetrievedEvent:
        """Retrieve the query's nodes (none for an empty query, which is not judged)."""
        query = ev.get("query")
        if not isinstance(query, str):
            raise TypeError(f"CRAGWorkflow.run needs query=... as a string, got {type(query).__name__}")
        nodes = await self.engine.aretrieved(QueryBundle(query)) if query.strip() else []
        return _streamed(ctx, RetrievedEvent(query=query, nodes=nodes))

    @step
    async def evaluate(self, ctx: Context, ev: RetrievedEvent) -> JudgedEvent:
        """Score every node and decide the action (`Corrector.ajudge`)."""
        judgment = await self.crag.corrector.ajudge(ev.query, [to_passage(n) for n in ev.nodes])
        return _streamed(ctx, JudgedEvent(query=ev.query, nodes=ev.nodes, judgment=judgment))

    @step
    async def decide(self, ctx: Context, ev: JudgedEvent) -> RefineEvent | SearchNeededEvent:
        """Correct or unjudged: refine; Incorrect or Ambiguous: search the web first."""
        if ev.judgment.action in (Action.CORRECT, Action.UNJUDGED):
            return _streamed(ctx, RefineEvent(query=ev.query, nodes=ev.nodes, judgment=ev.judgment))
        return _streamed(ctx, SearchNeededEvent(query=ev.query, nodes=ev.nodes, judgment=ev.judgment))

    @step
    async def web_search(self, ctx: Context, ev: SearchNeededEvent) -> RefineEvent:
        """Rewrite the question and search the web (`Corrector.asearch`)."""
        web = await self.crag.corrector.asearch(ev.query)
        return _streamed(ctx, RefineEvent(query=ev.query, nodes=ev.nodes, judgment=ev.judgment, web=web))

    @step
    async def refine(self, ctx: Context, ev: RefineEvent) -> KnowledgeEvent:
        """Refine the kept nodes and web passages into knowledge (`Corrector.afinish`)."""
        result = await self.crag.corrector.afinish(ev.judgment, ev.web)
        knowledge = await self.crag.adeliver(result, ev.nodes)
        return _streamed(ctx, KnowledgeEvent(query=ev.query, knowledge=knowledge, result=result))

    @step
    async def synthesize(self, ctx: Context, ev: KnowledgeEvent) -> StopEvent:
        """Answer from the knowledge, or the no-knowledge answer when CRAG abstained."""
        response = await self.engine.arespond(QueryBundle(ev.query), ev.knowledge, ev.result)
        return StopEvent(result=response)


def _streamed(ctx: Context, event: Event) -> Any:
    ctx.write_event_to_stream(event)
    return event
