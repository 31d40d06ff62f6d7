"""The reader's training pairs: does this passage (or strip) state the answer to this question?

Positives are answer-bearing passages and the strips around the answer, including paraphrased ones (the
sets written for crag). Negatives cover every near-miss kind: the same article's other paragraphs, SQuAD
2.0's questions written to be unanswerable from their own paragraph (a swapped entity, year or condition),
the paragraph's own sentences that do not hold the answer, the entity's other facts (PopQA's recorded web
strips without the answer), the written sets' near misses (another plan, model, version, person) and
off-topic passages. SQuAD 2.0 questions bring the paragraphs BM25 finds for them, labelled by the LLM judge
(`squad_labels.py`). Every question's pairs share a group id, for the listwise loss.

Held out of every pair: PopQA's 100 retrieval questions (`popqa_ctxs.jsonl`, the abstain and near-miss
benchmarks), the SQuAD articles of `qa_pairs.jsonl`'s eval split (the near-miss benchmark's SQuAD test half),
every judge set but those marked `train`, and the blind-spot sets of the `valid` and `test` halves
(`labelling.py`: questions written for the reader's blind spots, judged by an LLM).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from crag_shared.text.sentences import sentence_spans
from crag_shared.text.words import content_terms
from crag_shared.tools.data import Pair

from ..recall import has_answer_word
from .squad import Article, read_release

#: Which SQuAD 2.0 questions the LLM judged (`squad_labels.py`): their pairs come from there, not from here.
SQUAD2_CONTEXTS = Path(__file__).resolve().parent / "labels" / "squad2_contexts.jsonl"

#: Strips the way the refiner cuts them: sentences grouped to about this many words.
STRIP_WORDS = 40
PASSAGE_WORDS = 200


@dataclass(frozen=True)
class Mix:
    """How many questions each source gives (None: all), how often the written sets repeat, and what share of
    the blind-spot sets' training questions goes in (the learning curve: 1/4, 1/2, all) and how often. PopQA's
    recorded web strips are left out by default: the repository they come from states no licence. `squad2_llm`:
    the SQuAD 2.0 questions the LLM judged (`squad_labels.py`) bring their retrieved paragraphs with its verdicts."""
    squad_questions: int = 4000
    unanswerable: int | None = None
    qa_pairs: bool = True
    popqa_web: int = 0
    written_repeats: int = 3
    blindspots: float = 1.0
    blindspot_repeats: int = 1
    squad2_llm: bool = True
    seed: int = 0


def _digest(key: str) -> int:
    return int(hashlib.md5(key.encode("utf-8")).hexdigest()[:8], 16)


def _titled(text: str, title: str, key: str) -> str:
    """Half the pairs read "title: text" (the Corrector's `score_titles=True`), half the text alone."""
    return f"{title}: {text}" if title and _digest(key) % 2 else text


def _overlap(question: str, text: str) -> int:
    return len(set(content_terms(question)) & set(content_terms(text)))


def _holds(text: str, answers: Sequence[str]) -> bool:
    lowered = text.casefold()
    return any(a.casefold() in lowered for a in answers if a.strip())


def strips(text: str) -> list[str]:
    """`text` cut into strips of whole sentences of about `STRIP_WORDS` words."""
    groups: list[list[str]] = [[]]
    count = 0
    for start, end in sentence_spans("en", text):
        if count >= STRIP_WORDS:
            groups.append([])
            count = 0
        sentence = text[start:end]
        groups[-1].append(sentence)
        count += len(sentence.split())
    return [" ".join(g) for g in groups if g]


def cut(text: str, answers: Sequence[str], words: int = PASSAGE_WORDS) -> str:
    """A passage of at most `words` words: the whole text, or its run of sentences that holds an answer."""
    if len(text.split()) <= words:
        return text
    sentences = [text[a:b] for a, b in sentence_spans("en", text)]
    at = next((i for i, s in enumerate(sentences) if _holds(s, answers)), 0)
    kept, count, i = [], 0, at
    while i < len(sentences) and count + len(sentences[i].split()) <= words:
        kept.append(sentences[i])
        count += len(sentences[i].split())
        i += 1
    return " ".join(kept) or " ".join(text.split()[:words])


def squad_pairs(clone: Path, held_articles: set[str], mix: Mix, rng: random.Random) -> list[Pair]:
    """SQuAD v1.1 train questions: their paragraph and answer strip (positives), the article's best-overlapping
    and a random paragraph without the answer, and a strip of their own paragraph without it (negatives);
    SQuAD 2.0 dev's unanswerable questions on articles outside `held_articles`: their own paragraph and its
    best-overlapping strip (negatives)."""
    pairs: list[Pair] = []
    train = read_release(clone, "v1.1-train")
    chosen = [(a, p, q) for a in train for p in a.paragraphs for q in p.questions if q.answers]
    rng.shuffle(chosen)
    for number, (article, paragraph, question) in enumerate(chosen[: mix.squad_questions]):
        group = f"squad-train-{number}"
        answers = question.answers
        own = cut(paragraph.text, answers)
        if not _holds(own, answers):
            continue
        add = _adder(pairs, question.text, group, article.title, "squad")
        add(own, True, "answer_paragraph")
        pieces = strips(own)
        answering = [s for s in pieces if _holds(s, answers)]
        others = [s for s in pieces if not _holds(s, answers)]
        if answering:
            add(answering[0], True, "answer_strip")
        if others:
            add(max(others, key=lambda s: _overlap(question.text, s)), False, "own_paragraph_other_strip")
        rest = [p.text for p in article.paragraphs if p is not paragraph and not _holds(p.text, answers)]
        if rest:
            best = max(rest, key=lambda t: _overlap(question.text, t))
            add(cut(best, ()), False, "same_article_top_overlap")
            add(cut(rng.choice(rest), ()), False, "same_article_random")
    dev = [a for a in read_release(clone, "v2.0-dev") if a.title not in held_articles]
    labelled = {row["question_id"] for row in map(json.loads, SQUAD2_CONTEXTS.open(encoding="utf-8"))
                } if mix.squad2_llm and SQUAD2_CONTEXTS.is_file() else set()
    impossible = [(a, p, q) for a in dev for p in a.paragraphs for q in p.questions
                  if q.impossible and q.id not in labelled]
    rng.shuffle(impossible)
    for number, (article, paragraph, question) in enumerate(impossible[: mix.unanswerable]):
        add = _adder(pairs, question.text, f"squad-v2-{number}", article.title, "squad2")
        add(cut(paragraph.text, ()), False, "own_paragraph_unanswerable")
        pieces = strips(paragraph.text)
        if len(pieces) > 1:
            add(max(pieces, key=lambda s: _overlap(question.text, s)), False, "own_strip_unanswerable")
    return pairs


def _adder(pairs: list[Pair], question: str, group: str, title: str, source: str) -> Callable[[str, bool, str], None]:
    """A function that appends one labelled pair of `question` to `pairs`."""
    def add(text: str, relevant: bool, kind: str) -> None:
        pairs.append(Pair(question, _titled(" ".join(text.split()), title, f"{group}:{kind}"), relevant, group,
                          "train", f"{source}:{kind}"))
    return add


def qa_pairs_train(bench: Path) -> list[Pair]:
    """`qa_pairs.jsonl`'s train split, SQuAD rows only (HotpotQA's supporting paragraphs hold one hop of an
    answer, not the answer)."""
    pairs = []
    for line in (bench / "qa_pairs.jsonl").open(encoding="utf-8"):
        row = json.loads(line)
        if row["split"] == "train" and row["source"].startswith("squad"):
            pairs.append(Pair(row["question"], row["passage"], bool(row["relevant"]), f"qa-{row['question_id']}",
                              "train", f"qa_pairs:{row['pair_type']}"))
    return pairs


def dev_articles(clone: Path, bench: Path) -> list[Article]:
    """SQuAD 2.0 dev's articles outside `qa_pairs.jsonl`'s eval split (held out of every pair)."""
    held = held_squad_articles(clone, bench)
    return [a for a in read_release(clone, "v2.0-dev") if a.title not in held]


def held_squad_articles(clone: Path, bench: Path) -> set[str]:
    """Titles of the SQuAD articles with a question in `qa_pairs.jsonl`'s eval split."""
    return held_titles(read_release(clone, "v2.0-dev"), bench)


def held_titles(articles: Sequence[Article], bench: Path) -> set[str]:
    """Titles of those of `articles` with a question in `qa_pairs.jsonl`'s eval split."""
    eval_ids = {json.loads(line)["question_id"] for line in (bench / "qa_pairs.jsonl").open(encoding="utf-8")
                if '"eval"' in line}
    return {a.title for a in articles if any(q.id in eval_ids for p in a.paragraphs for q in p.questions)}


_STRIP_SPLIT = re.compile(r";\s+(?=[^;:]{2,120}:\s)")


def popqa_web_pairs(bench: Path, mix: Mix, rng: random.Random) -> list[Pair]:
    """PopQA's recorded web knowledge (questions outside the 100 retrieval questions): a strip that names a
    gold answer as a word (positive) and up to two that do not (the entity's other facts: negatives)."""
    held = {json.loads(line)["question"] for line in (bench / "popqa_ctxs.jsonl").open(encoding="utf-8")}
    rows = [json.loads(line) for line in (bench / "popqa_web.jsonl").open(encoding="utf-8")]
    rows = [r for r in rows if r["question"] not in held]
    rng.shuffle(rows)
    pairs: list[Pair] = []
    for row in rows[: mix.popqa_web]:
        pieces = [p.strip() for p in _STRIP_SPLIT.split(row["web_knowledge"]) if len(p.split()) >= 8]
        with_answer = [p for p in pieces if has_answer_word(p, row["answers"])]
        without = [p for p in pieces if not _holds(p, row["answers"])]
        group = f"popqa-web-{row['idx']}"
        for text, relevant, kind in ([(with_answer[0], True, "web_strip_answer")] if with_answer else []) + \
                [(t, False, "web_strip_other_fact") for t in rng.sample(without, min(2, len(without)))]:
            words = text.split()
            pairs.append(Pair(row["question"], " ".join(words[:PASSAGE_WORDS]), relevant, group, "train",
                              f"popqa_web:{kind}"))
    return pairs


def judge_set_pairs(folder: Path, repeats: int = 1) -> list[Pair]:
    """Pairs of a judge set (`corpus.jsonl` + `questions.jsonl`): an answerable question's answer passages
    and answer strips (positives), its document's other passages and strips, most overlapping first
    (negatives); a near miss's most overlapping passages and strips of the corpus (negatives); an off-topic
    question's two most overlapping passages (negatives)."""
    corpus = {row["id"]: row for row in map(json.loads, (folder / "corpus.jsonl").open(encoding="utf-8"))}
    pairs: list[Pair] = []
    for row in map(json.loads, (folder / "questions.jsonl").open(encoding="utf-8")):
        question, group = row["question"], f"{folder.name}-{row['id']}"
        answers = row.get("answers") or []
        add = _adder(pairs, question, group, "", f"written:{row['kind']}")
        gold = [corpus[i] for i in row.get("answer_ids", [])]
        ranked = sorted((p for p in corpus.values() if p["id"] not in row.get("answer_ids", [])),
                        key=lambda p: -_overlap(question, p["title"] + " " + p["text"]))
        if row["kind"] == "answerable":
            for passage in gold:
                add(_titled(passage["text"], passage["title"], group + passage["id"]), True, "answer_passage")
                held = [s for s in strips(passage["text"]) if _holds(s, answers)]
                if held and len(strips(passage["text"])) > 1:
                    add(held[0], True, "answer_strip")
                    rest = [s for s in strips(passage["text"]) if not _holds(s, answers)]
                    if rest:
                        add(max(rest, key=lambda s: _overlap(question, s)), False, "answer_passage_other_strip")
            same_doc = [p for p in ranked if gold and p["doc"] == gold[0]["doc"]]
            for passage in same_doc[:3]:
                add(_titled(passage["text"], passage["title"], group + passage["id"]), False, "same_doc")
        elif row["kind"] == "near_miss":
            for passage in ranked[:4]:
                add(_titled(passage["text"], passage["title"], group + passage["id"]), False, "near_miss")
            if ranked:
                add(max(strips(ranked[0]["text"]), key=lambda s: _overlap(question, s)), False, "near_miss_strip")
        else:
            for passage in ranked[:2]:
                add(passage["text"], False, "off_topic")
    return pairs * repeats


def written_train_sets(root: Path) -> list[Path]:
    """The judge sets written for training (every folder under `root` with a questions file)."""
    return sorted(p.parent for p in root.glob("*/questions.jsonl"))


def training_pairs(bench: Path, squad_clone: Path | None, written: Iterable[Path], mix: Mix) -> list[Pair]:
    """Every source's pairs, shuffled by group (a group's pairs stay together for the listwise loss)."""
    rng = random.Random(mix.seed)
    pairs: list[Pair] = []
    if squad_clone is not None:
        pairs += squad_pairs(squad_clone, held_squad_articles(squad_clone, bench), mix, rng)
    if mix.qa_pairs:
        pairs += qa_pairs_train(bench)
    if mix.popqa_web:
        pairs += popqa_web_pairs(bench, mix, rng)
    for folder in written:
        pairs += judge_set_pairs(folder, mix.written_repeats)
    return pairs
