"""`crag-bench recall`: does CRAG's knowledge still hold the answer, and how much less text does it hand over?

PopQA's 100 questions with their stored top-10 passages; the web knowledge the CRAG authors recorded for
each question is served through the real web layer (SerpAPISearch → PageFetcher → trafilatura) by a
loopback server speaking SerpAPI's JSON and serving one HTML page per recorded page title.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from crag_shared.corrector import Corrector
from crag_shared.evaluators import evaluator_from_spec
from crag_shared.files import json_lines
from crag_shared.rewrite import keyword_query
from crag_shared.rows import Record, id_of
from crag_shared.testing import FakeWeb
from crag_shared.types import Passage
from crag_shared.web.fetch import PageFetcher
from crag_shared.web.serpapi import SerpAPISearch

from .popqa import TOP_K, popqa_records


def has_answer_word(text: str, answers: Sequence[str]) -> bool:
    """A gold answer occurs with no word character right before or after it (the data README's rule)."""
    lowered = text.lower()
    return any(re.search(rf"(?<!\w){re.escape(a.lower())}(?!\w)", lowered) for a in answers if a.strip())


def recorded_pages(web_knowledge: str) -> dict[str, list[str]]:
    """The recorded knowledge "Title: paragraph ; Title: paragraph" as {page title: paragraphs}."""
    pages: dict[str, list[str]] = {}
    for piece in web_knowledge.split(" ; "):
        title, sep, paragraph = piece.partition(": ")
        if sep and paragraph.strip():
            pages.setdefault(title.strip(), []).append(paragraph.strip())
    return pages


def load(bench: Path, queries: int) -> list[Record]:
    """The benchmark's PopQA records, each with its recorded web pages ({title: paragraphs}) under
    `fields["pages"]`."""
    web = {id_of(row): row for _, row in json_lines(bench / "popqa_web.jsonl", "PopQA web knowledge")
           if isinstance(row, dict)}
    rows = popqa_records(bench, queries)
    for row in rows:
        row.fields["pages"] = recorded_pages(str(web[row.id]["web_knowledge"]))
    return rows


def pages_of(row: Record) -> dict[str, list[str]]:
    """A record's recorded web pages, as `load` keeps them."""
    pages = row.fields["pages"]
    assert isinstance(pages, dict)
    return pages


def serve_recorded(web: FakeWeb, rows: Sequence[Record], *, delay: float = 0.0) -> SerpAPISearch:
    """Put each row's recorded pages on `web` (each answering after `delay` seconds), as the results of the
    question's keyword query, and return the real SerpAPI client and page fetcher pointed at it."""
    for row in rows:
        names = []
        for j, (title, paragraphs) in enumerate(pages_of(row).items()):
            names.append(f"q{row.id}-{j}")
            web.add(names[-1], title, paragraphs, delay=delay)
        web.results[keyword_query(row.question)] = names
    return SerpAPISearch(api_key=web.api_key, base_url=web.url,
                         fetcher=PageFetcher(allow_private_addresses=["127.0.0.1/32"]))


def _score_text(texts: Sequence[str], answers: Sequence[str]) -> tuple[bool, int]:
    joined = "\n".join(texts)
    return has_answer_word(joined, answers), len(joined.split())


def run(out: TextIO, bench: Path, evaluators: Sequence[str] = ("lexical",), *, queries: int = 100) -> dict:
    """Answer recall and words handed over, plain RAG against CRAG per evaluator; printed and returned."""
    rows = load(bench, queries)
    plain = [_score_text([p.text or "" for p in r.passages[:TOP_K]], r.answers) for r in rows]
    results: dict[str, Any] = {"plain": {"recall": sum(h for h, _ in plain) / len(rows),
                                         "words": statistics.mean(w for _, w in plain)}}
    with FakeWeb() as web:
        search = serve_recorded(web, rows)
        for spec in evaluators:
            corrector = Corrector(evaluator=evaluator_from_spec(spec), web_search=search)
            hits, words, fallbacks = [], [], 0
            actions: Counter[str] = Counter()
            for row in rows:
                result = corrector.correct(row.question, row.passages[:TOP_K])
                hit, count = _score_text([s.text for s in result.knowledge], row.answers)
                hits.append(hit)
                words.append(count)
                actions[result.action.value] += 1
                fallbacks += bool(result.fallbacks)
            results[spec] = {"recall": sum(hits) / len(rows), "words": statistics.mean(words),
                             "actions": dict(actions), "queries_with_fallback": fallbacks}
    base = results["plain"]
    out.write(f"crag-bench recall: {len(rows)} PopQA questions; web knowledge served on loopback through "
              f"SerpAPISearch + PageFetcher\n  plain RAG (top-10 as stored): answer recall {base['recall']:.2f}, "
              f"{base['words']:.0f} words per question\n")
    for spec in evaluators:
        r = results[spec]
        out.write(f"  CRAG with {spec}: answer recall {r['recall']:.2f}, {r['words']:.0f} words per question = "
                  f"{r['words'] / base['words']:.0%} of plain RAG; actions {r['actions']}; "
                  f"{r['queries_with_fallback']} queries took a fallback\n")
    return results


def passage_pieces(passages: Sequence[Passage]) -> list[str]:
    """Pieces of the passages long enough to be recognized in a prompt: any one found there means passage
    text reached the generator (strips are verbatim spans of their passages)."""
    pieces = []
    for passage in passages:
        pieces += [p.strip() for p in re.split(r"(?<=[.!?])\s+", passage.text or "") if len(p.strip()) >= 25]
    return pieces


def reached(sent: Sequence[str], passages: Sequence[Passage]) -> bool:
    """Whether any recognizable piece of the passages appears in what the generator was sent."""
    joined = "\n".join(sent)
    return any(piece in joined for piece in passage_pieces(passages))
