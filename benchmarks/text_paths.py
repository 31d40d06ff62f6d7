"""The text paths of `crag-bench bounds`: each hostile text through the path it once made super-linear, in a fresh
process (seconds, peak RSS rise, RSS still held after it), and the default lexical judge against itself without
the reading, paired on PopQA.

- the reading's full-name check on 100 KB of names ("John Smith Jones ...", one run of capitalised words);
- the lexical best sentence of a 4 MB passage (`reads_answer=False`: the sentence search alone);
- the Chinese and German blends of a 1 MB passage (`language="zh"`, `"de"`);
- `correct()` over 100,000 passages, and over one 4 MB passage (goal <= 5 s on 2 cores).
"""

from __future__ import annotations

import gc
import json
import multiprocessing
import random
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from crag_shared.corrector import Corrector
from crag_shared.evaluators.lexical import LexicalEvaluator
from crag_shared.text.analysis import clear_text_caches
from crag_shared.text.reading import Reading

QUERY = "Where was Henry Feilden born?"
TEXT = "Henry Feilden was born in 1818 at Blackburn, Lancashire, and served as a Member of Parliament."
SENTENCE = "Henry Feilden served the borough of Blackburn in Parliament for many years after 1832. "
CHINESE = "检索评估器用哪个预训练模型初始化？"
GERMAN = "Wann wurde der Grundstein des Kölner Doms gelegt?"
#: the goal for one 4 MB passage through `correct()`, on 2 cores
PASSAGE_GOAL_S = 5.0
#: the goal for the default lexical judge against its cost without the reading (before the reading landed)
JUDGE_GOAL = 1.2


def _status_mb(field: str) -> float:
    """A memory figure of this process from /proc/self/status (Linux: VmRSS now, VmHWM its peak), in MB."""
    with open("/proc/self/status", encoding="ascii") as status:
        line = next(line for line in status.read(4_000).splitlines() if line.startswith(f"{field}:"))
    return int(line.split()[1]) / 1024


def _measured(run: Callable[[], object]) -> tuple[float, float, float]:
    """(seconds, peak RSS rise in MB, RSS still held after it in MB) of one call, warm-up done by the caller.
    The peak is reset first (/proc/self/clear_refs), so building the input does not hide the call's own."""
    gc.collect()
    with open("/proc/self/clear_refs", "w", encoding="ascii") as clear:
        clear.write("5")  # the peak resident set starts again from the present one
    before = _status_mb("VmRSS")
    started = time.perf_counter()
    run()
    seconds = time.perf_counter() - started
    peak = _status_mb("VmHWM")
    gc.collect()
    return seconds, peak - before, _status_mb("VmRSS") - before


def _han(chars: int) -> str:
    """Random Han characters in clauses of 10 to 40 with a full stop, the question every 50th clause."""
    rng, size = random.Random(0), 0
    clauses: list[str] = []
    while size < chars:
        clause = CHINESE if len(clauses) % 50 == 49 else "".join(
            chr(0x4E00 + rng.randrange(20_000)) for _ in range(rng.randint(10, 40))) + "。"
        clauses.append(clause)
        size += len(clause)
    return "".join(clauses)[:chars]


def _german(chars: int) -> str:
    """Words of 3 to 16 letters from 20,000 made up, a third capitalised, in sentences of about 15; the question's
    topic every 50th sentence."""
    rng = random.Random(0)
    letters = "abcdefghijklmnopqrstuvwxyzäöüß"
    vocabulary = ["".join(rng.choice(letters) for _ in range(rng.randint(3, 16))) for _ in range(20_000)]
    sentences: list[str] = []
    size = 0
    while size < chars:
        if len(sentences) % 50 == 49:
            sentence = "Der Grundstein des Kölner Doms wurde 1248 gelegt."
        else:
            picked = [rng.choice(vocabulary) for _ in range(rng.randint(8, 22))]
            sentence = " ".join(w.capitalize() if rng.random() < 0.3 else w for w in picked).capitalize() + "."
        sentences.append(sentence)
        size += len(sentence) + 1
    return " ".join(sentences)[:chars]


def _reading(scale: float) -> tuple[float, float, float]:
    reading = Reading("Where was John Smith born?")
    reading.assess(TEXT)
    names = ("John Smith Jones " * 6_000)[:int(100_000 * scale)]
    return _measured(lambda: reading.assess(names))


def _best_sentence(scale: float) -> tuple[float, float, float]:
    judge = LexicalEvaluator(reads_answer=False)
    judge.evaluate(QUERY, [TEXT])
    passage = SENTENCE * int(4_000_000 * scale / len(SENTENCE))
    return _measured(lambda: judge.evaluate(QUERY, [passage]))


def _blend(language: str, scale: float) -> tuple[float, float, float]:
    question, text = (CHINESE, _han) if language == "zh" else (GERMAN, _german)
    judge = LexicalEvaluator(language=language)
    judge.evaluate(question, [text(2_000)])  # loads the segmenter, the stemmer and the stopwords
    passage = text(int(1_000_000 * scale))
    clear_text_caches()
    return _measured(lambda: judge.evaluate(question, [passage]))


def _many(scale: float) -> tuple[float, float, float]:
    corrector = Corrector()
    corrector.correct(QUERY, [TEXT])
    passages = [f"{SENTENCE}Passage {i} tells of Blackburn." for i in range(int(100_000 * scale))]
    return _measured(lambda: corrector.correct(QUERY, passages))


def _passage(scale: float) -> tuple[float, float, float]:
    corrector = Corrector()
    corrector.correct(QUERY, [TEXT])
    passage = SENTENCE * int(4_000_000 * scale / len(SENTENCE))
    return _measured(lambda: corrector.correct(QUERY, [passage]))


CASES: dict[str, Callable[[float], tuple[float, float, float]]] = {
    "reading: full-name check, 100 KB of names": _reading,
    "lexical best sentence of a 4 MB passage": _best_sentence,
    "Chinese blend of a 1 MB passage": lambda scale: _blend("zh", scale),
    "German blend of a 1 MB passage": lambda scale: _blend("de", scale),
    "correct(): 100,000 passages": _many,
    "4 MB internal passage through correct()": _passage,
}


def _case(name: str, scale: float) -> tuple[float, float, float]:
    return CASES[name](scale)


def case_rows(scale: float = 1.0) -> dict[str, tuple[float, float, float]]:
    """Each case in a fresh process: {case: (seconds, peak RSS rise MB, RSS held after MB)}; `scale` shrinks the
    inputs (a quick run)."""
    rows = {}
    for name in CASES:
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
            rows[name] = pool.submit(_case, name, scale).result()
    return rows


def judge_row(bench: Path, rounds: int = 12) -> dict[str, float]:
    """The default lexical judge against the same judge without the reading (`reads_answer=False`, a faithful
    stand-in for the judge before the reading landed: within about 5 % of that commit's, paired), over PopQA's 100
    questions and their passages: passes interleaved in alternating order, each with the caches of texts emptied
    (a query's passages are new to it). Median ms per query of each, and the median of the rounds' ratios."""
    rows = [json.loads(line) for line in (bench / "popqa_ctxs.jsonl").open(encoding="utf-8")]
    items = [(row["question"], [ctx["text"] for ctx in row["ctxs"]]) for row in rows]
    judges = {"default": LexicalEvaluator(), "without the reading": LexicalEvaluator(reads_answer=False)}
    seconds: dict[str, list[float]] = {name: [] for name in judges}
    for judge in judges.values():  # warm: imports, tables, the words' caches
        for query, texts in items:
            judge.evaluate(query, texts)
    for round_ in range(rounds):
        for name in list(judges) if round_ % 2 == 0 else list(judges)[::-1]:
            clear_text_caches()
            started = time.perf_counter()
            for query, texts in items:
                judges[name].evaluate(query, texts)
            seconds[name].append(time.perf_counter() - started)
    ratios = [a / b for a, b in zip(seconds["default"], seconds["without the reading"])]
    return {"default_ms": statistics.median(seconds["default"]) * 1000 / len(items),
            "without_ms": statistics.median(seconds["without the reading"]) * 1000 / len(items),
            "ratio": statistics.median(ratios), "rounds": rounds}
