"""CRAGWorkflow on llama-index-workflows 2.x idioms: a child of the user's own workflow, state in ctx.store,
the web step under a retry policy, and a run that resumes from a snapshot."""

import asyncio

import pytest
from llama_index.core.workflow import Context, StartEvent, StopEvent, Workflow, step
from workflows.context.serializers import PickleSerializer

from crag_llamaindex import CRAGStartEvent, CRAGWorkflow, JudgedEvent
from crag_llamaindex.testing import FixedRetriever, RuleLLM
from crag_shared import WebSearchError
from crag_shared.demo import QUESTIONS, build_corrector, corpus

CORRECT_Q, AMBIGUOUS_Q, INCORRECT_Q = QUESTIONS


class Counting(FixedRetriever):
    """Counts retrievals, so a resumed run can show it did not retrieve again."""

    calls: int = 0

    def _retrieve(self, query_bundle):
        Counting.calls += 1
        return super()._retrieve(query_bundle)


class Flaky:
    """A web search that raises `failures` times, then answers as the demo's recorded web does."""

    def __init__(self, failures: int) -> None:
        self.inner, self.failures, self.calls = build_corrector().web_search, failures, 0

    def search(self, query, top_k=5):
        return asyncio.run(self.asearch(query, top_k))

    async def asearch(self, query, top_k=5):
        self.calls += 1
        if self.calls <= self.failures:
            raise WebSearchError("HTTP 503 from the search API")
        return await self.inner.asearch(query, top_k)


def crag_workflow(**settings):
    from llama_index.core.schema import NodeWithScore, TextNode

    nodes = [NodeWithScore(node=TextNode(text=p.text, id_=p.id), score=0.5) for p in corpus()]
    return CRAGWorkflow(Counting({q: nodes for q in QUESTIONS}), llm=RuleLLM(), timeout=30,
                        **{"evaluator": "default", **settings})


class ResearchWorkflow(Workflow):
    """A user's own workflow that asks CRAG as one of its steps."""

    def __init__(self, crag: CRAGWorkflow) -> None:
        super().__init__(timeout=60)
        self.crag = crag

    @step
    async def ask(self, ctx: Context, ev: StartEvent) -> StopEvent:
        answers = [await self.crag.run(start_event=CRAGStartEvent(query=q)) for q in ev.get("questions")]
        return StopEvent(result=answers)


async def test_crag_workflow_nested_as_a_child_workflow():
    crag = crag_workflow(web_search=build_corrector().web_search)
    answers = await ResearchWorkflow(crag).run(questions=list(QUESTIONS))
    actions = [a.metadata["crag"]["action"] for a in answers]
    assert actions == ["correct", "ambiguous", "incorrect"]
    direct = await crag.run(query=AMBIGUOUS_Q)
    assert direct.metadata["crag"]["scores"] == answers[1].metadata["crag"]["scores"]


async def test_progress_lives_in_ctx_store():
    crag = crag_workflow()
    handler = crag.run(query=INCORRECT_Q)
    await handler
    state = await handler.ctx.store.get("crag")
    assert state["query"] == INCORRECT_Q and state["action"] == "incorrect" and state["abstained"]
    assert state["web_attempts"] == 1 and len(state["scores"]) == len(corpus())


async def test_a_web_search_that_raised_is_retried_and_the_last_failure_takes_the_fallback():
    flaky = Flaky(failures=1)
    answer = await crag_workflow(web_search=flaky, web_retry_delay=0).run(query=INCORRECT_Q)
    assert flaky.calls == 2 and answer.metadata["crag"]["web_urls"] and not answer.metadata["crag"]["abstained"]
    down = Flaky(failures=10)
    handler = crag_workflow(web_search=down, web_attempts=3, web_retry_delay=0).run(query=INCORRECT_Q)
    answer = await handler
    assert down.calls == 3 and answer.metadata["crag"]["abstained"]
    assert (await handler.ctx.store.get("crag"))["web_attempts"] == 3
    with pytest.raises(ValueError, match="web_attempts"):
        crag_workflow(web_attempts=0)


async def test_a_snapshotted_run_resumes_where_it_stopped():
    crag = crag_workflow(web_search=build_corrector().web_search)
    expected = await crag.run(query=AMBIGUOUS_Q)
    Counting.calls = 0
    handler = crag.run(query=AMBIGUOUS_Q)
    snapshot = None
    async for event in handler.stream_events():
        if isinstance(event, JudgedEvent):
            snapshot = handler.ctx.to_dict(serializer=PickleSerializer())
            break
    await handler.cancel_run()
    assert snapshot is not None and Counting.calls == 1
    restored = crag_workflow(web_search=build_corrector().web_search)
    ctx = Context.from_dict(restored, snapshot, serializer=PickleSerializer())
    resumed = await restored.run(ctx=ctx)
    assert Counting.calls == 1  # not retrieved again: the run went on from its judgment
    assert resumed.metadata["crag"]["scores"] == expected.metadata["crag"]["scores"]
    assert [n.node.get_content() for n in resumed.source_nodes] == [n.node.get_content() for n in expected.source_nodes]
