"""CRAGWorkflow: Algorithm 1 as a LlamaIndex Workflow, each step a typed event, over the Corrector's slices.

retrieve -> evaluate -> decide -> (web_search) -> refine -> synthesize. The steps call the same
`judge` / `search` / `finish` slices that `Corrector.correct` is made of, so a question gets the same
action, scores and knowledge here as through `CRAGPostprocessor` or `CRAGQueryEngine`. The run's progress
is kept in `ctx.store` under "crag"; the web step runs under a retry policy for transient faults; a run
snapshotted with `ctx.to_dict(serializer=PickleSerializer())` resumes where it stopped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, TypeVar

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.bridge.pydantic import BeforeValidator
from llama_index.core.indices.base import BaseIndex
from llama_index.core.llms import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.prompts import BasePromptTemplate
from llama_index.core.response_synthesizers import BaseSynthesizer
from llama_index.core.schema import (
    Document,
    ImageDocument,
    ImageNode,
    IndexNode,
    NodeWithScore,
    QueryBundle,
    TextNode,
)
from llama_index.core.workflow import Context, Event, StartEvent, StopEvent, Workflow, step

from crag_shared.adapter import NO_KNOWLEDGE_ANSWER, Action, CorrectionResult, Judgment, WebOutcome

from .convert import to_passage
from .postprocessor import CRAGPostprocessor
from .query_engine import CRAGQueryEngine, OnAbstain

_NODE_CLASSES = {cls.class_name(): cls for cls in (TextNode, ImageNode, IndexNode, Document, ImageDocument)}


def _concrete_nodes(value: Any) -> Any:
    """Nodes read back from a JSON snapshot as their own classes (`NodeWithScore.node` is the abstract
    `BaseNode`, which pydantic cannot build), so a resumed run gets the nodes it had."""
    if not isinstance(value, list):
        return value
    return [NodeWithScore(node=_NODE_CLASSES.get(item["node"].get("class_name"), TextNode).model_validate(item["node"]),
                          score=item.get("score"))
            if isinstance(item, dict) and isinstance(item.get("node"), dict) else item for item in value]


E = TypeVar("E", bound=Event)

#: Nodes in an event: written into snapshots as JSON, read back as their concrete classes.
Nodes = Annotated[list[NodeWithScore], BeforeValidator(_concrete_nodes)]


class CRAGStartEvent(StartEvent):
    """The question, as `workflow.run(query=...)` or a parent workflow's `run(start_event=CRAGStartEvent(...))`."""

    query: Any = None


class TransientWebSearchError(Exception):
    """A web search that raised (a timeout, a 5xx, a dropped connection): `web_retry` tries it again."""

    def __init__(self, reason: str, attempts: int, delay: float) -> None:
        super().__init__(reason)
        self.attempts, self.delay = attempts, delay


class WebRetry:
    """The web step's retry policy: a search that raised is tried up to the `web_attempts` the workflow
    was built with (carried by the error), `web_retry_delay` seconds apart; every other error stops."""

    def next(self, elapsed_time: float, attempts: int, error: Exception, **_: Any) -> float | None:
        """Seconds until the next attempt, or None to stop."""
        if isinstance(error, TransientWebSearchError) and attempts < error.attempts:
            return error.delay
        return None


class RetrievedEvent(Event):
    """The retriever's nodes for the query."""

    query: str
    nodes: Nodes


class JudgedEvent(Event):
    """Every node scored, and the action (Correct / Incorrect / Ambiguous)."""

    query: str
    nodes: Nodes
    judgment: Judgment


class SearchNeededEvent(Event):
    """Incorrect or Ambiguous: the question goes to the web."""

    query: str
    nodes: Nodes
    judgment: Judgment


class RefineEvent(Event):
    """What refinement works on: the judged nodes and, unless Correct, the web outcome."""

    query: str
    nodes: Nodes
    judgment: Judgment
    web: WebOutcome | None = None


class KnowledgeEvent(Event):
    """The refined knowledge as nodes, and the full correction (action, scores, trace)."""

    query: str
    knowledge: Nodes
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

    Inside your own workflow, run it as a child: `await crag_workflow.run(query=...)` from a step (or
    `start_event=CRAGStartEvent(query=...)`). A web search that raised (not one that found nothing) is
    tried again, `web_attempts` times in all, `web_retry_delay` seconds apart; the last failure takes the
    usual fallback. `ctx.store["crag"]` holds the query, action, scores, web attempts and abstention.
    """

    def __init__(self, retriever: BaseRetriever | None = None, *, index: BaseIndex | None = None,
                 similarity_top_k: int = 10, crag: CRAGPostprocessor | None = None, llm: LLM | None = None,
                 response_synthesizer: BaseSynthesizer | None = None, streaming: bool = False,
                 no_knowledge_answer: str = NO_KNOWLEDGE_ANSWER, on_abstain: OnAbstain = "answer",
                 no_context_prompt: BasePromptTemplate | str | None = None,
                 node_postprocessors: Sequence[BaseNodePostprocessor] = (),
                 timeout: float | None = 120.0, verbose: bool = False, num_concurrent_runs: int | None = None,
                 web_attempts: int = 2, web_retry_delay: float = 1.0, **crag_settings: Any) -> None:
        if retriever is None:
            if index is None:
                raise ValueError("pass either retriever=... or index=...")
            retriever = index.as_retriever(similarity_top_k=similarity_top_k)
        elif index is not None:
            raise ValueError("pass either retriever=... or index=...")
        if not isinstance(web_attempts, int) or web_attempts < 1:
            raise ValueError(f"web_attempts must be an integer of at least 1, got {web_attempts!r}")
        if not isinstance(web_retry_delay, (int, float)) or web_retry_delay < 0:
            raise ValueError(f"web_retry_delay must be a number of seconds >= 0, got {web_retry_delay!r}")
        self.web_attempts, self.web_retry_delay = web_attempts, float(web_retry_delay)
        super().__init__(timeout=timeout, verbose=verbose, num_concurrent_runs=num_concurrent_runs)
        self.engine = CRAGQueryEngine(retriever, crag=crag, response_synthesizer=response_synthesizer, llm=llm,
                                      streaming=streaming, no_knowledge_answer=no_knowledge_answer,
                                      on_abstain=on_abstain, no_context_prompt=no_context_prompt,
                                      node_postprocessors=node_postprocessors, **crag_settings)

    @property
    def crag(self) -> CRAGPostprocessor:
        """The `CRAGPostprocessor` the workflow's steps use."""
        return self.engine.crag

    @step
    async def retrieve(self, ctx: Context, ev: CRAGStartEvent) -> RetrievedEvent:
        """Retrieve the query's nodes (none for an empty query, which is not judged)."""
        query = ev.query
        if not isinstance(query, str):
            raise TypeError(f"CRAGWorkflow.run needs query=... as a string, got {type(query).__name__}")
        await ctx.store.set("crag", {"query": query, "web_attempts": 0})
        nodes = await self.engine.aretrieved(QueryBundle(query)) if query.strip() else []
        return _streamed(ctx, RetrievedEvent(query=query, nodes=nodes))

    @step
    async def evaluate(self, ctx: Context, ev: RetrievedEvent) -> JudgedEvent:
        """Score every node and decide the action (`Corrector.ajudge`)."""
        judgment = await self.crag.corrector.ajudge(ev.query, [to_passage(n) for n in ev.nodes])
        async with ctx.store.edit_state() as state:
            state["crag"] = {**state["crag"], "action": judgment.action.value, "scores": list(judgment.scores)}
        return _streamed(ctx, JudgedEvent(query=ev.query, nodes=ev.nodes, judgment=judgment))

    @step
    async def decide(self, ctx: Context, ev: JudgedEvent) -> RefineEvent | SearchNeededEvent:
        """Correct or unjudged: refine; Incorrect or Ambiguous: search the web first."""
        if ev.judgment.action in (Action.CORRECT, Action.UNJUDGED):
            return _streamed(ctx, RefineEvent(query=ev.query, nodes=ev.nodes, judgment=ev.judgment))
        return _streamed(ctx, SearchNeededEvent(query=ev.query, nodes=ev.nodes, judgment=ev.judgment))

    @step(retry_policy=WebRetry())
    async def web_search(self, ctx: Context, ev: SearchNeededEvent) -> RefineEvent:
        """Rewrite the question and search the web (`Corrector.asearch`); a search that raised is tried
        again while attempts remain."""
        async with ctx.store.edit_state() as state:
            attempt = state["crag"]["web_attempts"] + 1
            state["crag"] = {**state["crag"], "web_attempts": attempt}
        web = await self.crag.corrector.asearch(ev.query)
        if web is not None and web.error and attempt < self.web_attempts:
            raise TransientWebSearchError(web.failure, self.web_attempts, self.web_retry_delay)
        return _streamed(ctx, RefineEvent(query=ev.query, nodes=ev.nodes, judgment=ev.judgment, web=web))

    @step
    async def refine(self, ctx: Context, ev: RefineEvent) -> KnowledgeEvent:
        """Refine the kept nodes and web passages into knowledge (`Corrector.afinish`)."""
        result = await self.crag.corrector.afinish(ev.judgment, ev.web)
        knowledge = await self.crag.adeliver(result, ev.nodes)
        async with ctx.store.edit_state() as state:
            state["crag"] = {**state["crag"], "abstained": result.abstained}
        return _streamed(ctx, KnowledgeEvent(query=ev.query, knowledge=knowledge, result=result))

    @step
    async def synthesize(self, ctx: Context, ev: KnowledgeEvent) -> StopEvent:
        """Answer from the knowledge, or the no-knowledge answer when CRAG abstained."""
        response = await self.engine.arespond(QueryBundle(ev.query), ev.knowledge, ev.result)
        return StopEvent(result=response)


def _streamed(ctx: Context, event: E) -> E:
    ctx.write_event_to_stream(event)
    return event
