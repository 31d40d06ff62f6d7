"""Language rows of `crag-bench accuracy --languages`: pair AUROC of the lexical evaluator beyond English.

- Chinese and Japanese: the CRAG paper's translations in `../shared/papers` are cut into passages of a few
  sentences; each question (written for crag, in `language_sets/<code>.jsonl`) names a short answer span,
  and the first passage holding it is the positive. The six nearest passages without it, from the same
  section, are the hard negatives. The papers' texts stay in ../shared; only the questions are ours.
- German: topics of six passages written for crag; each question's own passage is the positive, the other
  five passages of its topic the negatives.
Each set is scored with the language given, with "auto" and with "en" (what the default did before).
"""

from __future__ import annotations

import json
import re
import statistics
import time
from pathlib import Path
from typing import Any, TextIO

from crag_shared.evaluators.lexical import LexicalEvaluator
from crag_shared.language import clear_text_caches
from crag_shared.tools.data import Pair, auroc

SETS = Path(__file__).with_name("language_sets")
#: where the Chinese paper's body ends (its references follow); passages that are mostly Latin letters
#: (the English prompts of the appendix, tables, reference lists) are left out of both
BODY_END = {"zh": "参考文献"}
NEGATIVES = 6


def paper_passages(text: str, min_chars: int = 90) -> list[str]:
    """A translated paper cut into passages of whole sentences, each at least `min_chars` long (the
    translations break lines inside sentences, so lines are joined first)."""
    text = re.sub(r"\n(?=\S)", "", text)
    text = re.sub(r"\s*\n\s*", "\n", text)
    sentences = [s.strip() for s in re.split(r"(?<=[。！？])|\n", text) if s.strip()]
    passages, current = [], ""
    for sentence in sentences:
        current += sentence
        if len(current) >= min_chars:
            passages.append(current)
            current = ""
    return passages + ([current] if current else [])


def paper_pairs(papers: Path, code: str) -> list[Pair]:
    """The question–passage pairs of one translated paper."""
    text = (papers / f"crag-paper-{code}.txt").read_text(encoding="utf-8")
    passages = [p for p in paper_passages(text.split(BODY_END.get(code, "\0"))[0])
                if sum(c.isascii() and c.isalpha() for c in p) * 2 < len(p)]
    pairs = []
    for n, line in enumerate((SETS / f"{code}.jsonl").read_text(encoding="utf-8").splitlines()):
        row = json.loads(line)
        holding = [i for i, p in enumerate(passages) if row["answer"] in p]
        if not holding:
            raise ValueError(f"{code}.jsonl:{n + 1}: no passage of the paper holds {row['answer']!r}")
        positive = holding[0]
        others = sorted((i for i in range(len(passages)) if i not in holding), key=lambda i: abs(i - positive))
        pairs.append(Pair(row["question"], passages[positive], True, f"{code}-{n}"))
        pairs += [Pair(row["question"], passages[i], False, f"{code}-{n}") for i in others[:NEGATIVES]]
    return pairs


def written_pairs(code: str) -> list[Pair]:
    """The question–passage pairs of a set written for crag (topics of passages, questions naming theirs)."""
    pairs = []
    for topic in map(json.loads, (SETS / f"{code}.jsonl").read_text(encoding="utf-8").splitlines()):
        for n, (question, own) in enumerate(topic["questions"]):
            for i, passage in enumerate(topic["passages"]):
                pairs.append(Pair(question, passage, i == own, f"{code}-{topic['topic']}-{n}"))
    return pairs


def language_sets(papers: Path) -> dict[str, tuple[str, list[Pair]]]:
    """{set name: (language code, pairs)}."""
    return {"zh: the CRAG paper in Chinese": ("zh", paper_pairs(papers, "zh")),
            "ja: the CRAG paper in Japanese": ("ja", paper_pairs(papers, "ja")),
            "de: topics written in German": ("de", written_pairs("de"))}


def _auroc(evaluator: LexicalEvaluator, pairs: list[Pair], *, cold: bool = False,
           words_too: bool = False) -> tuple[float, float]:
    """(pair AUROC, ms per query) scoring each query's passages in one call; `cold` empties the text
    caches (sentences, CJK runs; `words_too`: stems too) before each query, as for passages never seen
    before."""
    by_query: dict[str, list[Pair]] = {}
    for pair in pairs:
        by_query.setdefault(pair.query_id, []).append(pair)
    scores, labels, times = [], [], []
    for group in by_query.values():
        if cold:
            clear_text_caches(words_too=words_too)
        started = time.perf_counter()
        scores += evaluator.score(group[0].query, [p.passage for p in group])
        times.append((time.perf_counter() - started) * 1000)
        labels += [p.relevant for p in group]
    return auroc(scores, labels), statistics.median(times)


def run(out: TextIO, papers: Path) -> dict[str, dict[str, Any]]:
    """The language table: pair AUROC per set with its language, "auto" and "en"; printed and returned."""
    results: dict[str, dict[str, Any]] = {}
    out.write("\n| language set | queries | pairs | AUROC, its language | AUROC, auto | AUROC, en (before) "
              "| ms per query: new texts / new words too (median) |\n|---|---|---|---|---|---|---|\n")
    for name, (code, pairs) in language_sets(papers).items():
        own, ms = _auroc(LexicalEvaluator(language=code), pairs, cold=True)
        _, ms_cold = _auroc(LexicalEvaluator(language=code), pairs, cold=True, words_too=True)
        auto, _ = _auroc(LexicalEvaluator(language="auto"), pairs)
        english, _ = _auroc(LexicalEvaluator(), pairs)
        queries = len({p.query_id for p in pairs})
        results[name] = {"language": code, "queries": queries, "pairs": len(pairs), "pair_auroc": own,
                         "auto_auroc": auto, "en_auroc": english, "ms_per_query": ms, "ms_new_words": ms_cold}
        out.write(f"| {name} | {queries} | {len(pairs)} | **{own:.3f}** | {auto:.3f} | {english:.3f} "
                  f"| {ms:.2f} / {ms_cold:.2f} |\n")
    return results
