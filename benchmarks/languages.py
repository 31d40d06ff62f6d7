"""Language rows of `crag-bench accuracy --languages`: pair AUROC of the lexical evaluator beyond English.

Two kinds of set per language: those written with the feature (negatives near the answer in the text), and
hard ones whose negatives share the question's key terms. Every set is split in halves by the md5 of the
question: settings were chosen on the tune halves; the test halves are reported beside them.

- Chinese and Japanese: the CRAG paper's translations in `../shared/papers` are cut into passages of a few
  sentences; each question (written for crag, in `language_sets/<code>.jsonl`) names a short answer span,
  and the first passage holding it is the positive. The six nearest passages without it, from the same
  section, are the hard negatives. The papers' texts stay in ../shared; only the questions are ours.
- German: topics of six passages written for crag; each question's own passage is the positive, the other
  five passages of its topic the negatives.
- Hard Chinese and Japanese (`hard_<code>.jsonl`): each question names its answer span and its key terms;
  the negatives are the paper's passages without the answer holding the most key terms.
- Hard German (`hard_de.jsonl`): five facts of one subject each, every passage naming the subject.
Each set is scored with the language given, with "auto", with the default "en", and by two baselines with no
analysis: character bigrams and plain lower-case words.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from crag_shared.evaluators.lexical import LexicalEvaluator
from crag_shared.text.analysis import clear_text_caches
from crag_shared.text.words import char_bigrams
from crag_shared.tools.data import Pair, auroc

from .near_miss import half

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


def _paper(papers: Path, code: str) -> list[str]:
    """The passages of a translated paper's body, without those mostly in Latin letters."""
    text = (papers / f"crag-paper-{code}.txt").read_text(encoding="utf-8")
    return [p for p in paper_passages(text.split(BODY_END.get(code, "\0"))[0])
            if sum(c.isascii() and c.isalpha() for c in p) * 2 < len(p)]


def _nearest(row: dict[str, Any], passages: list[str], holding: list[int]) -> list[int]:
    """The passages nearest the answering one, without the answer."""
    return sorted((i for i in range(len(passages)) if i not in holding), key=lambda i: abs(i - holding[0]))


def _sharing_keys(row: dict[str, Any], passages: list[str], holding: list[int]) -> list[int]:
    """The passages without the answer holding the most of the question's key terms (the nearest first among
    equals); fewer than 4 holding one is an error of the set."""
    shared = {i: sum(key in passages[i] for key in row["keys"]) for i in range(len(passages)) if i not in holding}
    ranked = sorted((i for i in shared if shared[i]), key=lambda i: (-shared[i], abs(i - holding[0])))
    if len(ranked) < 4:
        raise ValueError(f"fewer than 4 passages share the key terms of {row['question']!r}")
    return ranked


def _question_pairs(papers: Path, code: str, name: str,
                    negatives: Callable[[dict[str, Any], list[str], list[int]], list[int]]) -> list[Pair]:
    """The pairs of the questions in `language_sets/<name>.jsonl` on one translated paper: the first passage
    holding the answer span is the positive, `negatives` picks the others (at most `NEGATIVES`)."""
    passages = _paper(papers, code)
    pairs = []
    for n, line in enumerate((SETS / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()):
        row = json.loads(line)
        holding = [i for i, p in enumerate(passages) if row["answer"] in p]
        if not holding:
            raise ValueError(f"{name}.jsonl:{n + 1}: no passage of the paper holds {row['answer']!r}")
        key, split = f"{name}-{n}", half(row["question"])
        pairs.append(Pair(row["question"], passages[holding[0]], True, key, split=split))
        pairs += [Pair(row["question"], passages[i], False, key, split=split)
                  for i in negatives(row, passages, holding)[:NEGATIVES]]
    return pairs


def paper_pairs(papers: Path, code: str) -> list[Pair]:
    """The question–passage pairs of one translated paper: the six passages nearest the answer as negatives."""
    return _question_pairs(papers, code, code, _nearest)


def hard_paper_pairs(papers: Path, code: str) -> list[Pair]:
    """The hard question–passage pairs of one translated paper (`language_sets/hard_<code>.jsonl`): each
    question names its answer span and its key terms; the negatives are the passages without the answer
    that hold the most key terms, at least 4 of them holding one."""
    return _question_pairs(papers, code, f"hard_{code}", _sharing_keys)


def written_pairs(code: str, name: str | None = None) -> list[Pair]:
    """The question–passage pairs of a set written for crag (topics of passages, questions naming theirs);
    `name`: the set's file (default: the language code), e.g. "hard_de"."""
    pairs = []
    for topic in map(json.loads, (SETS / f"{name or code}.jsonl").read_text(encoding="utf-8").splitlines()):
        for n, (question, own) in enumerate(topic["questions"]):
            for i, passage in enumerate(topic["passages"]):
                pairs.append(Pair(question, passage, i == own, f"{code}-{topic['topic']}-{n}", split=half(question)))
    return pairs


def language_sets(papers: Path) -> dict[str, tuple[str, list[Pair]]]:
    """{set name: (language code, pairs)}: the sets written with the feature, then the hard ones."""
    return {"zh: the CRAG paper in Chinese": ("zh", paper_pairs(papers, "zh")),
            "ja: the CRAG paper in Japanese": ("ja", paper_pairs(papers, "ja")),
            "de: topics written in German": ("de", written_pairs("de")),
            "zh hard: negatives share the question's key terms": ("zh", hard_paper_pairs(papers, "zh")),
            "ja hard: negatives share the question's key terms": ("ja", hard_paper_pairs(papers, "ja")),
            "de hard: five facts of one subject": ("de", written_pairs("de", "hard_de"))}


def bigram_scores(query: str, texts: list[str]) -> list[float]:
    """The baseline with no analysis for Chinese and Japanese: the share of the question's character bigrams
    (punctuation and spaces dropped) a text holds."""
    asked = char_bigrams(query)
    return [len(asked & char_bigrams(t)) / max(1, len(asked)) for t in texts]


def plain_scores(query: str, texts: list[str]) -> list[float]:
    """The baseline with no analysis for word languages: the share of the question's lower-cased words a text
    holds."""
    asked = set(re.findall(r"\w+", query.lower()))
    return [len(asked & set(re.findall(r"\w+", t.lower()))) / max(1, len(asked)) for t in texts]


def _groups(pairs: list[Pair], half: str | None = None) -> list[list[Pair]]:
    by_query: dict[str, list[Pair]] = {}
    for pair in pairs:
        if half is None or pair.split == half:
            by_query.setdefault(pair.query_id, []).append(pair)
    return list(by_query.values())


def _auroc(score: Callable[[str, list[str]], list[float]], pairs: list[Pair], half: str | None = None,
           *, cold: bool = False, words_too: bool = False) -> tuple[float, float]:
    """(pair AUROC, ms per query) scoring each query's passages in one call, on one half (None: all);
    `cold` empties the text caches (sentences, CJK runs, bigrams; `words_too`: stems too) before each query,
    as for passages never seen before."""
    scores, labels, times = [], [], []
    for group in _groups(pairs, half):
        if cold:
            clear_text_caches(words_too=words_too)
        started = time.perf_counter()
        scores += score(group[0].query, [p.passage for p in group])
        times.append((time.perf_counter() - started) * 1000)
        labels += [p.relevant for p in group]
    return auroc(scores, labels), statistics.median(times)


def run(out: TextIO, papers: Path) -> dict[str, dict[str, Any]]:
    """The language table: pair AUROC per set (all, tune half, test half) with its language, "auto", the
    default "en", and the analysis-free baselines; printed and returned."""
    results: dict[str, dict[str, Any]] = {}
    out.write("\n| language set | queries | pairs | AUROC, its language: all (tune / test) | auto | default \"en\" "
              "| no analysis: character bigrams / words | ms per query: new texts / new words too (median) |\n"
              "|---|---|---|---|---|---|---|---|\n")
    for name, (code, pairs) in language_sets(papers).items():
        own = LexicalEvaluator(language=code).score
        found = {half: _auroc(own, pairs, half, cold=True)[0] for half in (None, "tune", "test")}
        _, ms = _auroc(own, pairs, cold=True)
        _, ms_cold = _auroc(own, pairs, cold=True, words_too=True)
        auto, _ = _auroc(LexicalEvaluator(language="auto").score, pairs)
        default, _ = _auroc(LexicalEvaluator().score, pairs)
        bigram, _ = _auroc(bigram_scores, pairs)
        plain, _ = _auroc(plain_scores, pairs)
        queries = len({p.query_id for p in pairs})
        results[name] = {"language": code, "queries": queries, "pairs": len(pairs), "pair_auroc": found[None],
                         "tune": found["tune"], "test": found["test"], "auto_auroc": auto, "en_auroc": default,
                         "bigram_auroc": bigram, "plain_auroc": plain, "ms_per_query": ms, "ms_new_words": ms_cold}
        out.write(f"| {name} | {queries} | {len(pairs)} | **{found[None]:.3f}** ({found['tune']:.3f} / "
                  f"{found['test']:.3f}) | {auto:.3f} | {default:.3f} | {bigram:.3f} / {plain:.3f} "
                  f"| {ms:.2f} / {ms_cold:.2f} |\n")
    return results
