"""Real retrieved text for the reader, judged by the LLM: SQuAD 2.0 dev questions, answerable and written to be
unanswerable from their own paragraph, each with the paragraphs BM25 finds for it among the dev articles.

No article of `qa_pairs.jsonl`'s eval split (the near-miss benchmark's SQuAD test half) is searched or asked
about. The LLM judge's prompt (crag's own) lists each question's `TOP_K` paragraphs; `squad2_contexts.jsonl`
records which (article title, paragraph number) each prompt listed, so the verdicts are read back from the
explorer clone without storing SQuAD's text here. Where the LLM gave no verdict, SQuAD's own label stands: the
question's paragraph answers an answerable question, no other paragraph does.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from crag_shared.evaluators.judge_prompt import parse_numbered
from crag_shared.recorded import prompt_key, read_recording
from crag_shared.tools.data import Pair
from crag_shared.types import Passage

from ..llm_judge import judge_prompts_for
from .data import SQUAD2_CONTEXTS, _titled, cut
from .labelling import RECORDINGS
from .squad import Article, Question

CONTEXTS = SQUAD2_CONTEXTS
RECORDING = RECORDINGS / "squad2.jsonl"
TOP_K = 5


@dataclass(frozen=True)
class Retrieved:
    """One SQuAD 2.0 question with the paragraphs BM25 found for it: (article title, paragraph number), best first."""

    question: Question
    own: tuple[str, int]
    passages: list[tuple[str, int]]


def retrieve(articles: Sequence[Article], questions: int, seed: int = 0, top_k: int = TOP_K) -> list[Retrieved]:
    """`questions` questions of `articles` (half written unanswerable, half answerable, chosen by `seed`), each
    with BM25's top `top_k` paragraphs ("title: text") among every paragraph of `articles`."""
    from haystack import Document
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    store = InMemoryDocumentStore()
    store.write_documents([Document(id=f"{a.title}#{i}", content=f"{a.title}: {p.text}",
                                    meta={"title": a.title, "paragraph": i})
                           for a in articles for i, p in enumerate(a.paragraphs)])
    asked = [(q, (a.title, i)) for a in articles for i, p in enumerate(a.paragraphs) for q in p.questions]
    rng = random.Random(seed)
    rng.shuffle(asked)
    impossible = [x for x in asked if x[0].impossible][: questions // 2]
    answerable = [x for x in asked if not x[0].impossible][: questions - len(impossible)]
    bm25 = InMemoryBM25Retriever(store, top_k=top_k)
    found = []
    for question, own in impossible + answerable:
        documents = bm25.run(query=question.text)["documents"]
        found.append(Retrieved(question, own, [(d.meta["title"], d.meta["paragraph"]) for d in documents]))
    return found


def write_prompts(out: Path, articles: Sequence[Article], retrieved: Sequence[Retrieved],
                  contexts: Path = CONTEXTS) -> int:
    """The judge prompts of `retrieved` (one per question, shuffled by key) to `out`, and the contexts beside
    the labels (`contexts`); the number of prompts."""
    text = _paragraphs(articles)
    rows = [{"question": r.question.text, "passages": [Passage(cut(text[p], ()), id=f"{p[0]}#{p[1]}", title=p[0])
                                                      for p in r.passages]} for r in retrieved]
    listed = judge_prompts_for(rows)
    keys = [prompt_key(prompt) for prompt in listed]
    prompts, keyed = dict(zip(keys, listed)), dict(zip(keys, retrieved))
    with out.open("w", encoding="utf-8") as handle:
        for key in sorted(keyed):
            handle.write(json.dumps({"key": key, "prompt": prompts[key]}, ensure_ascii=False) + "\n")
    contexts.parent.mkdir(parents=True, exist_ok=True)
    with contexts.open("w", encoding="utf-8") as handle:
        for key in sorted(keyed):
            r = keyed[key]
            handle.write(json.dumps({"key": key, "question_id": r.question.id, "own": list(r.own),
                                     "passages": [list(p) for p in r.passages]}, ensure_ascii=False) + "\n")
    return len(keyed)


def squad2_llm_pairs(articles: Sequence[Article], recording: Path = RECORDING, contexts: Path = CONTEXTS
                     ) -> list[Pair]:
    """Each recorded question's retrieved paragraphs as training pairs (a group per question): the LLM's verdict,
    or SQuAD's own label where it gave none. Each pair's `kind` says the question's kind and the label's source."""
    if not contexts.is_file():
        return []
    replies = read_recording(recording) if recording.is_file() else {}
    text = _paragraphs(articles)
    questions = {q.id: q for a in articles for p in a.paragraphs for q in p.questions}
    pairs: list[Pair] = []
    for row in map(json.loads, contexts.open(encoding="utf-8")):
        question = questions.get(row["question_id"])
        if question is None:
            continue
        listed = [tuple(p) for p in row["passages"]]
        reply = replies.get(row["key"])
        verdicts = parse_numbered(reply, len(listed)) if reply is not None else [None] * len(listed)
        kind = "unanswerable" if question.impossible else "answerable"
        group = f"squad2-llm-{question.id}"
        for (title, number), verdict in zip(listed, verdicts):
            gold = not question.impossible and [title, number] == row["own"]
            label = gold if verdict is None else verdict > 0
            pairs.append(Pair(question.text, _titled(cut(text[(title, number)], ()), title, f"{group}:{number}"),
                              label, group, "train", f"squad2_llm:{kind}:{'gold' if verdict is None else 'llm'}"))
    return pairs


def _paragraphs(articles: Sequence[Article]) -> dict[tuple[str, int], str]:
    return {(a.title, i): p.text for a in articles for i, p in enumerate(a.paragraphs)}
