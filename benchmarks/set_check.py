"""Checks a judge set (`judge_sets/README.md`): the shape of every row, unique ids, answer passages that exist
and hold their answers verbatim. `python -m benchmarks.set_check FOLDER...` prints each problem and exits 1."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

KINDS = ("answerable", "near_miss", "off_topic")
STYLES = ("fact", "number", "howto", "why", "yesno", "paraphrase", "definition", "comparison", "list", "table")
#: What a near miss has instead of the answer (`near_miss_kind`, optional in the older sets).
NEAR_MISS_KINDS = ("other_subject", "namesake", "related_work", "other_attribute", "other_condition",
                   "other_time", "planned_not_done", "question_echo", "not_stated")


def problems(folder: Path) -> list[str]:
    """Every problem of the judge set in `folder`, one line each ("" when none)."""
    found: list[str] = []
    corpus: dict[str, dict] = {}
    for number, row in _rows(folder / "corpus.jsonl", found):
        where = f"{folder.name}/corpus.jsonl:{number}"
        for key in ("id", "doc", "title", "text"):
            if not isinstance(row.get(key), str):
                found.append(f"{where}: '{key}' must be a string")
        if row.get("id") in corpus:
            found.append(f"{where}: duplicate id {row['id']!r}")
        if isinstance(row.get("text"), str) and not row["text"].strip():
            found.append(f"{where}: empty text")
        corpus[row.get("id", "")] = row
    ids: set[str] = set()
    for number, row in _rows(folder / "questions.jsonl", found):
        where = f"{folder.name}/questions.jsonl:{number}"
        if not isinstance(row.get("question"), str) or not row["question"].strip():
            found.append(f"{where}: 'question' must be a non-empty string")
        if row.get("id") in ids:
            found.append(f"{where}: duplicate id {row.get('id')!r}")
        ids.add(row.get("id"))
        kind = row.get("kind")
        if kind not in KINDS:
            found.append(f"{where}: kind {kind!r} is not one of {KINDS}")
            continue
        gold = row.get("answer_ids") or []
        if kind != "off_topic" and row.get("style") not in STYLES:
            found.append(f"{where}: style {row.get('style')!r} is not one of {STYLES}")
        if kind == "answerable":
            if not gold:
                found.append(f"{where}: an answerable question needs answer_ids")
            for answer_id in gold:
                if answer_id not in corpus:
                    found.append(f"{where}: answer id {answer_id!r} is not in the corpus")
            texts = [" ".join(corpus[i]["text"].split()).lower() for i in gold if i in corpus]
            for answer in row.get("answers") or []:
                wanted = " ".join(str(answer).split()).lower()
                if texts and not any(wanted in text for text in texts):
                    found.append(f"{where}: answer {answer!r} is not verbatim in its answer passages")
        elif gold:
            found.append(f"{where}: a {kind} question has no answer_ids")
        if kind == "near_miss" and "near_miss_kind" in row and row["near_miss_kind"] not in NEAR_MISS_KINDS:
            found.append(f"{where}: near_miss_kind {row['near_miss_kind']!r} is not one of {NEAR_MISS_KINDS}")
    return found


def _rows(path: Path, found: list[str]) -> list[tuple[int, dict]]:
    if not path.is_file():
        found.append(f"{path}: missing")
        return []
    rows = []
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not text.strip():
            continue
        try:
            row = json.loads(text)
        except json.JSONDecodeError as error:
            found.append(f"{path.parent.name}/{path.name}:{number}: not JSON ({error})")
            continue
        if isinstance(row, dict):
            rows.append((number, row))
        else:
            found.append(f"{path.parent.name}/{path.name}:{number}: not an object")
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """Check each folder named; print the problems; 1 when there are any."""
    every = [line for folder in (argv if argv is not None else sys.argv[1:]) for line in problems(Path(folder))]
    print("\n".join(every) if every else "ok")
    return 1 if every else 0


if __name__ == "__main__":
    sys.exit(main())
