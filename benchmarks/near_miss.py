"""`crag-bench near-miss`: retrieval that looks right and is not, and what CRAG hands the generator then.

A near miss is the right neighbourhood without the answer: a namesake, the entity's other facts, the
article's other paragraphs. Three sets, each split in two halves, a tune half (every fit) and a test half
(reported, never fitted on):

- PopQA: each question with its own top-10 passages minus those that carry the answer (other pages,
  `relevant` and `has_answer` both false, text not empty); the 89 questions with at least 3 of them. Beside
  it the in-corpus set (own top-10) and the off-topic set (the next question's top-10). Halves by the md5
  of the question.
- written: 44 questions written for crag (`near_miss/written.jsonl`), each with one answering passage and
  3-4 passages about the same entity that do not answer (later life, family, the city itself). Halves by
  the md5 of the id.
- SQuAD: questions of `qa_pairs.jsonl` (SQuAD v1.1 dev) with their paragraph and the 3 other paragraphs of
  the same article it was built with (none holds the answer). Halves by the file's own split (train: tune,
  eval: test), which splits by whole article.

`--fit` searches the lexical evaluator's reading penalties and upper threshold on the tune halves for the
most answers kept with near misses passed on at most 20 % (PopQA) and 40 % (own sets), and reports the
test halves. `--evaluator SPEC` also fits Eq. 2 with near misses and off-topic sets as negative queries,
per evaluator, on the tune halves, and reports the test halves.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from crag_shared.calibration import fit_thresholds, judged_scores
from crag_shared.corrector import Corrector
from crag_shared.evaluators import LexicalEvaluator, RetrievalEvaluator, describe, evaluator_from_spec
from crag_shared.policy import ActionPolicy
from crag_shared.rows import Record, iter_rows
from crag_shared.types import Passage

from .popqa import TOP_K, popqa_records
from .recall import has_answer_word, reached

WRITTEN = Path(__file__).with_name("near_miss") / "written.jsonl"
#: The goals a fit must meet on its tune halves: near misses passed on, at most (PopQA, own sets), off topic.
NEAR_MISS_GOALS = {"popqa": 0.20, "written": 0.40, "squad": 0.40, "off_topic": 0.05}
Row = dict[str, Any]


def half(key: str) -> str:
    """"tune" or "test", by the md5 of `key`: stable, and independent of order."""
    return "test" if int(hashlib.md5(key.encode("utf-8")).hexdigest(), 16) % 2 else "tune"


def popqa_sets(bench: Path, queries: int | None = None, shift: int = 1) -> dict[str, list[Row]]:
    """PopQA's in-corpus, near-miss and off-topic rows (abstain's row shape: `question`, `answers`, `half`,
    `passages`, `relevant`, and for PopQA's own passages their `labels`) of the first `queries` questions;
    off topic, question i gets the passages of question i + `shift`."""
    records = popqa_records(bench, queries)
    inside, near, outside = [], [], []
    for i, record in enumerate(records):
        base = {"question": record.question, "answers": list(record.answers), "half": half(record.question)}
        own, labels = record.passages[:TOP_K], [bool(y) for y in record.labels[:TOP_K]]
        inside.append({**base, "passages": own, "labels": labels, "relevant": any(labels)})
        misses = [p for p, y in zip(own, labels)
                  if not y and not p.metadata.get("has_answer") and (p.text or "").strip()]
        if len(misses) >= 3:
            near.append({**base, "passages": misses, "relevant": False})
        other = records[(i + shift) % len(records)].passages[:TOP_K]
        outside.append({**base, "passages": other,
                        "relevant": any(p.title == record.fields["s_wiki_title"] for p in other)})
    return {"in corpus": inside, "near miss": near, "off topic": outside}


def _own_rows(items: Sequence[dict[str, Any]], key: str) -> dict[str, list[Row]]:
    """In-corpus rows (the answering passage among the near misses, at a position fixed by its key) and
    near-miss rows (the near misses alone) of a set of (question, answering, near) items."""
    inside, near = [], []
    for item in items:
        misses = list(item["near"])
        at = int(hashlib.md5(item[key].encode("utf-8")).hexdigest(), 16) % (len(misses) + 1)
        texts = [*misses[:at], item["answering"], *misses[at:]]
        base = {"question": item["question"], "answers": item.get("answers", []), "half": item["half"],
                "answering": item["answering"]}
        inside.append({**base, "passages": [Passage(t, id=str(r)) for r, t in enumerate(texts)], "relevant": True})
        near.append({**base, "passages": [Passage(t, id=str(r)) for r, t in enumerate(misses)], "relevant": False})
    return {"in corpus": inside, "near miss": near}


def written_sets(path: Path = WRITTEN) -> dict[str, list[Row]]:
    """The written set's in-corpus and near-miss rows."""
    items = [json.loads(line) for line in path.open(encoding="utf-8")]
    return _own_rows([{**item, "half": half(item["id"])} for item in items], "id")


def squad_sets(bench: Path, per_half: int = 150) -> dict[str, list[Row]]:
    """SQuAD questions with their paragraph and the same article's other paragraphs, `per_half` per half
    (the first by question id)."""
    grouped: dict[str, list[Record]] = {}
    for pair in iter_rows(bench / "qa_pairs.jsonl", "qa_pairs"):
        if pair.fields.get("source") == "squad_v1.1_dev":
            grouped.setdefault(pair.key, []).append(pair)
    items = []
    for qid, pairs in sorted(grouped.items()):
        gold = [p for p in pairs if p.labels[0]]
        misses = [p.passages[0].text for p in pairs if not p.labels[0]]
        if len(gold) == 1 and len(misses) >= 3:
            items.append({"id": qid, "question": gold[0].question, "answering": gold[0].passages[0].text,
                          "near": misses, "half": "tune" if gold[0].split == "train" else "test"})
    chosen = [i for h in ("tune", "test") for i in [i for i in items if i["half"] == h][:per_half]]
    return _own_rows(chosen, "id")


def all_sets(bench: Path, squad_per_half: int = 150) -> dict[str, dict[str, list[Row]]]:
    """Every set by name: popqa, written, squad."""
    return {"popqa": popqa_sets(bench), "written": written_sets(), "squad": squad_sets(bench, squad_per_half)}


def answer_kept(row: Row, sent: Sequence[str]) -> bool:
    """Whether the answer reached the generator: a gold answer as a word where the set has answers, else
    a sentence of the answering passage; never for a row with neither (a near miss, an off-topic question)."""
    if row.get("answers"):
        return has_answer_word("\n".join(sent), row["answers"])
    return bool(row.get("answering")) and reached(sent, [Passage(row["answering"])])


def outcomes(corrector: Corrector, rows: Sequence[Row]) -> tuple[int, int]:
    """(answers kept, knowledge passed on) over `rows` through the core."""
    kept = passed = 0
    for row in rows:
        result = corrector.correct(row["question"], row["passages"])
        sent = [] if result.abstained else [result.knowledge_text]
        kept += answer_kept(row, sent)
        passed += bool(sent)
    return kept, passed


def figures(corrector: Corrector, sets: dict[str, dict[str, list[Row]]], which: str) -> dict[str, tuple[int, ...]]:
    """Per set, on one half: (in-corpus questions, answers kept, near-miss questions, passed on[, off topic,
    passed on])."""
    out = {}
    for name, parts in sets.items():
        inside = [r for r in parts["in corpus"] if r["half"] == which]
        near = [r for r in parts["near miss"] if r["half"] == which]
        row: tuple[int, ...] = (len(inside), outcomes(corrector, inside)[0], len(near), outcomes(corrector, near)[1])
        if "off topic" in parts:
            off = [r for r in parts["off topic"] if r["half"] == which]
            row += (len(off), outcomes(corrector, off)[1])
        out[name] = row
    return out


def _meets(found: dict[str, tuple[int, ...]]) -> float:
    """How far the figures are over the goals (0 when all are met)."""
    over = sum(max(0.0, found[name][3] / max(1, found[name][2]) - NEAR_MISS_GOALS[name]) for name in found)
    if len(found["popqa"]) > 4:
        over += max(0.0, found["popqa"][5] / max(1, found["popqa"][4]) - NEAR_MISS_GOALS["off_topic"])
    return over


def _kept(found: dict[str, tuple[int, ...]]) -> float:
    return sum(row[1] / max(1, row[0]) for row in found.values()) / len(found)


GRID = {"relation_penalty": (0.4, 0.6, 0.8, 1.0), "name_penalty": (0.0, 0.1, 0.2, 0.3),
        "upper": (0.2, 0.25, 0.3, 0.32, 0.35, 0.4, 0.45)}


def fit_lexical(sets: dict[str, dict[str, list[Row]]], lower: float = -0.5
                ) -> tuple[dict[str, float], dict[str, tuple[int, ...]]]:
    """The lexical settings that meet the near-miss goals on the tune halves with the most answers kept
    (ties: the smaller penalties); when none meets them, the one closest to meeting them."""
    best: tuple[float, float, dict[str, float], dict[str, tuple[int, ...]]] | None = None
    for relation, name, upper in itertools.product(*GRID.values()):
        evaluator = LexicalEvaluator(relation_penalty=relation, name_penalty=name)
        found = figures(Corrector(evaluator, ActionPolicy(upper, lower)), sets, "tune")
        key = (-_meets(found), _kept(found))
        if best is None or key > best[:2]:
            best = (*key, {"relation_penalty": relation, "name_penalty": name, "upper": upper, "lower": lower}, found)
    assert best is not None
    return best[2], best[3]


def eq2_thresholds(evaluator: RetrievalEvaluator, sets: dict[str, dict[str, list[Row]]], which: str = "tune"
                   ) -> tuple[float, float]:
    """Eq. 2 thresholds on one half, each passage scored through a Corrector's `judge` as calibration does:
    in-corpus questions positive when a passage is relevant (PopQA's title rule) or answers (own sets);
    near-miss and off-topic questions negative."""
    judge = Corrector(evaluator, fallback_evaluator=None)
    scores: list[list[float]] = []
    labels: list[list[bool]] = []
    for name, parts in sets.items():
        for part, rows in parts.items():
            for row in (r for r in rows if r["half"] == which):
                passages = row["passages"]
                scores.append(judged_scores(judge, row["question"], passages).scores)
                if part != "in corpus":
                    labels.append([False] * len(passages))
                elif name == "popqa":
                    labels.append(row["labels"])
                else:
                    labels.append([p.text == row["answering"] for p in passages])
    policy = fit_thresholds(scores, labels).policy
    return policy.upper, policy.lower


def _table(out: TextIO, title: str, found: dict[str, tuple[int, ...]]) -> None:
    out.write(f"  {title}\n")
    for name, row in found.items():
        extra = f"; off topic passed on {row[5]}/{row[4]}" if len(row) > 4 else ""
        out.write(f"    {name:<8} answer kept {row[1]}/{row[0]} ({row[1] / max(1, row[0]):.0%}); near misses passed "
                  f"on {row[3]}/{row[2]} ({row[3] / max(1, row[2]):.0%}){extra}\n")


def run(out: TextIO, bench: Path, *, fit: bool = False, evaluators: Sequence[str] = (),
        squad_per_half: int = 150) -> dict[str, Any]:
    """Print the near-miss figures of the default judge (tune and test halves); with `fit`, the
    lexical fit; with `evaluators`, each one's Eq. 2 fit. Returns the figures."""
    sets = all_sets(bench, squad_per_half)
    results: dict[str, Any] = {}
    out.write("crag-bench near-miss: default settings, no web search; halves: tune (fitted on) / test (reported)\n")
    corrector = Corrector()
    for which in ("tune", "test"):
        results[f"default {which}"] = found = figures(corrector, sets, which)
        policy = corrector.policy
        _table(out, f"default judge {describe(corrector.evaluator)} ({policy.upper}, {policy.lower}), {which} half",
               found)
    if fit:
        settings, tuned = fit_lexical(sets)
        fitted = LexicalEvaluator(relation_penalty=settings["relation_penalty"],
                                  name_penalty=settings["name_penalty"])
        tested = figures(Corrector(fitted, ActionPolicy(settings["upper"], settings["lower"])), sets, "test")
        results["fit"] = {"settings": settings, "tune": tuned, "test": tested}
        out.write(f"\nlexical fit on the tune halves: {settings}\n")
        _table(out, "tune half", tuned)
        _table(out, "test half", tested)
    for spec in evaluators:
        evaluator = evaluator_from_spec(spec)
        upper, lower = eq2_thresholds(evaluator, sets)
        tested = figures(Corrector(evaluator, ActionPolicy(upper, lower)), sets, "test")
        default = figures(Corrector(evaluator), sets, "test")
        results[f"eq2 {spec}"] = {"upper": upper, "lower": lower, "test": tested, "default test": default}
        out.write(f"\n{spec}: Eq. 2 with near misses as negatives, tune half: upper {upper:+.2f}, lower {lower:+.2f}\n")
        _table(out, f"test half at its defaults {evaluator.thresholds}", default)
        _table(out, "test half at the Eq. 2 thresholds", tested)
    return results
