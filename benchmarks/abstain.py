"""`crag-bench abstain`: does irrelevant text reach the generator, through the core and every adapter entry point?

With the one-line setups (no web search, default settings), three kinds of set:
- out of corpus: each PopQA question with the top-10 passages of another question (question i gets those
  of question i + `shift`), so every passage is irrelevant: counted is how often any of that text reaches
  the generator;
- near miss: the right neighbourhood without the answer (`near_miss.py`: PopQA's own passages minus those
  that carry the answer, the written set, SQuAD's other paragraphs of the article): counted is the same;
- in corpus: each question with its own passages: counted is how often the gold answer reaches the
  generator, and how often a question with a relevant passage (PopQA's title rule) is abstained on.
Each entry point runs with a recording stand-in LLM or generator, so "reaches the generator" means what the
generator was really sent: the core's `knowledge_text`, the LlamaIndex postprocessor in a
`RetrieverQueryEngine`, `CRAGQueryEngine`, `CRAGWorkflow`, the Haystack `CRAG` component in a pipeline, and
`build_crag_pipeline`. Needs both adapters installed (the development workspace has them).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from crag_shared.corrector import Corrector
from crag_shared.recorded import RecordedLLM
from crag_shared.types import Passage

from .near_miss import answer_kept, popqa_sets, squad_sets, written_sets
from .recall import reached

ENTRY_POINTS = ("core", "llamaindex postprocessor", "llamaindex query engine", "llamaindex workflow",
                "haystack CRAG component", "haystack build_crag_pipeline")
#: What an entry point answers for one (question, passages): the texts the generator was sent, and
#: whether CRAG abstained.
Answer = Callable[[str, list[Passage]], tuple[list[str], bool]]


def core_answer(judge: RecordedLLM | None = None) -> Answer:
    """`Corrector.correct` as an entry point: the knowledge text it would hand the generator; with `judge`, the
    LLM judge replaying it (no evaluator argument), else the offline default."""
    corrector = Corrector(llm=judge)

    def answer(question: str, passages: list[Passage]) -> tuple[list[str], bool]:
        result = corrector.correct(question, passages)
        return ([] if result.abstained else [result.knowledge_text]), result.abstained

    return answer


def llamaindex_answers(rows: Sequence[dict[str, Any]], judge: RecordedLLM | None = None) -> dict[str, Answer]:
    """The LlamaIndex entry points over these rows, each with a recording stand-in LLM. Without `judge` they
    judge with the offline default (`evaluator="default"`: the stand-in is no judge); with it, the app's LLM
    replays `judge` for crag's judge prompts: the query engine and the workflow with no evaluator argument, the
    postprocessor given `evaluator="llm"`."""
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.schema import NodeWithScore, TextNode

    from crag_llamaindex import CRAGPostprocessor, CRAGQueryEngine, CRAGWorkflow
    from crag_llamaindex.testing import FixedRetriever, RuleLLM, first_context_line

    from .llm_judge import JUDGE_MARK

    nodes = {r["question"]: [NodeWithScore(node=TextNode(text=p.text, id_=f"{i}-{p.id}", metadata={"title": p.title}),
                                           score=p.score) for p in r["passages"]] for i, r in enumerate(rows)}
    retriever = FixedRetriever(nodes)
    if judge is None:
        llm, settings = RuleLLM(), {"evaluator": "default"}
    else:
        llm = RuleLLM(lambda p: judge.complete(p) if JUDGE_MARK in p else f"[stand-in] {first_context_line(p)}")
        settings = {}
    postprocessed = RetrieverQueryEngine.from_args(retriever, llm=llm, node_postprocessors=[
        CRAGPostprocessor(llm=llm, evaluator=settings.get("evaluator", "llm"))])
    engine = CRAGQueryEngine(retriever, llm=llm, **settings)
    workflow = CRAGWorkflow(retriever, llm=llm, timeout=None, **settings)

    def recorded(run: Callable[[str], Any]) -> Answer:
        def answer(question: str, passages: list[Passage]) -> tuple[list[str], bool]:
            before = len(llm.prompts)
            response = run(question)
            crag = (response.metadata or {}).get("crag")
            abstained = crag["abstained"] if crag else not response.source_nodes
            return [p for p in llm.prompts[before:] if JUDGE_MARK not in p], abstained
        return answer

    return {"llamaindex postprocessor": recorded(postprocessed.query),
            "llamaindex query engine": recorded(engine.query),
            "llamaindex workflow": recorded(lambda q: asyncio.run(_run_workflow(workflow, q)))}


async def _run_workflow(workflow: Any, question: str) -> Any:
    return await workflow.run(query=question)  # the workflow starts its tasks on the running loop


def haystack_answers(rows: Sequence[dict[str, Any]], judge: RecordedLLM | None = None) -> dict[str, Answer]:
    """The Haystack entry points over these rows, each with a recording stand-in generator. Without `judge` they
    judge with the offline default; with it, the pipeline's generator replays `judge` for crag's judge prompts:
    `build_crag_pipeline` with no evaluator argument, the `CRAG` component given the generator and
    `evaluator="llm"`."""
    from haystack import Document, Pipeline

    from crag_haystack import build_crag_pipeline
    from crag_haystack.testing import ExtractiveChatGenerator, FixedRetriever, crag_component_pipeline

    from .haystack_judging import JudgingGenerator

    documents = {r["question"]: [Document(content=p.text, id=f"{i}-{p.id}", meta={"title": p.title})
                                 for p in r["passages"]] for i, r in enumerate(rows)}
    component_generator, built_generator = ExtractiveChatGenerator(), ExtractiveChatGenerator()
    if judge is None:
        component = crag_component_pipeline(FixedRetriever(documents), component_generator, evaluator="default")
        built = build_crag_pipeline(FixedRetriever(documents), built_generator, evaluator="default")
    else:
        judging = JudgingGenerator(judge, component_generator)
        component = crag_component_pipeline(FixedRetriever(documents), judging, evaluator="llm", chat_generator=judging)
        built = build_crag_pipeline(FixedRetriever(documents), JudgingGenerator(judge, built_generator))

    def recorded(pipeline: Pipeline, generator: ExtractiveChatGenerator) -> Answer:
        def answer(question: str, passages: list[Passage]) -> tuple[list[str], bool]:
            before = len(generator.prompts)
            result = pipeline.run({"query": question})
            return generator.prompts[before:], "no_answer" in result
        return answer

    return {"haystack CRAG component": recorded(component, component_generator),
            "haystack build_crag_pipeline": recorded(built, built_generator)}


def measure(rows: Sequence[dict[str, Any]], answers: dict[str, Answer]) -> dict[str, dict[str, int]]:
    """Per entry point: questions where passage text / the gold answer reached the generator, abstentions,
    and abstentions on questions with a relevant passage."""
    figures = {}
    for name, answer in answers.items():
        counts = {"passage_text_reached": 0, "answer_reached": 0, "abstained": 0, "abstained_with_relevant": 0}
        for row in rows:
            sent, abstained = answer(row["question"], row["passages"])
            counts["passage_text_reached"] += reached(sent, row["passages"])
            counts["answer_reached"] += answer_kept(row, sent)
            counts["abstained"] += abstained
            counts["abstained_with_relevant"] += abstained and row["relevant"]
        figures[name] = counts
    return figures


def run(out: TextIO, bench: Path, *, queries: int = 100, shift: int = 1, squad_per_half: int = 50
        ) -> dict[str, Any]:
    """Run the benchmark, print its table to `out`, and return the figures (the SQuAD rows: its test half)."""
    popqa = popqa_sets(bench, queries, shift)
    inside, outside, near = popqa["in corpus"], popqa["off topic"], popqa["near miss"]
    written = written_sets()
    squad = {part: [r for r in rows if r["half"] == "test"] for part, rows in squad_sets(bench, squad_per_half).items()}
    results: dict[str, Any] = {}
    for label, rows in (("out of corpus", outside), ("in corpus", inside), ("near miss: PopQA", near),
                        ("in corpus: written", written["in corpus"]), ("near miss: written", written["near miss"]),
                        ("in corpus: SQuAD test half", squad["in corpus"]),
                        ("near miss: SQuAD test half", squad["near miss"])):
        answers = {"core": core_answer(), **llamaindex_answers(rows), **haystack_answers(rows)}
        results[label] = {"questions": len(rows), "with_relevant": sum(r["relevant"] for r in rows),
                          "entry_points": measure(rows, answers)}
    out.write(f"crag-bench abstain: PopQA, {queries} questions, default settings, no web search "
              f"(out of corpus: question i with the passages of question i+{shift})\n")
    for label, figures in results.items():
        out.write(f"\n{label}: {figures['questions']} questions, {figures['with_relevant']} with a relevant "
                  "passage\n")
        out.write(f"  {'entry point':<30} {'passage text reached':>21} {'gold answer reached':>20} "
                  f"{'abstained':>10} {'abstained w/ relevant':>22}\n")
        for name, c in figures["entry_points"].items():
            out.write(f"  {name:<30} {c['passage_text_reached']:>21} {c['answer_reached']:>20} "
                      f"{c['abstained']:>10} {c['abstained_with_relevant']:>22}\n")
    return results
