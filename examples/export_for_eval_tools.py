"""CRAG's verdicts beside an evaluation tool's metrics: `crag run` over 30 questions, `crag export` of the
run for ragas and for deepeval, and each export loaded into the tool's own dataset type when the tool is
installed. Offline; needs crag-shared alone (ragas and deepeval are optional).

    python examples/export_for_eval_tools.py [OUT_DIR]

1. a `crag run` data file from the cookbook: each question with the four passages of its entity, and its
   answers (the gold answers become each exported row's reference);
2. `crag run --data data.jsonl --out run.jsonl`;
3. `crag export run.jsonl --format ragas -o ragas.jsonl --data data.jsonl`, and `--format deepeval`;
4. `ragas.EvaluationDataset.from_jsonl("ragas.jsonl")` and
   `deepeval.dataset.EvaluationDataset().add_goldens_from_jsonl_file("deepeval.jsonl")`.

Then run the tool's metrics as you already do (ragas `evaluate(dataset, metrics=[...])`, deepeval
`evaluate(...)` after adding your generator's `actual_output`); CRAG's action, scores and reason travel in
each row's `crag` field (ragas: read the JSONL beside the dataset; deepeval: `golden.additional_metadata`).
"""

import importlib.util
import json
import os
import sys
from pathlib import Path

from crag_shared.tools.cli import main as crag

COOKBOOK = Path(__file__).resolve().parent / "cookbook"


def write_data(path: Path) -> Path:
    """The cookbook's questions, each with its entity's passages and its answers, as `crag run` reads them."""
    corpus = [json.loads(line) for line in (COOKBOOK / "corpus.jsonl").open(encoding="utf-8")]
    with path.open("w", encoding="utf-8") as out:
        for line in (COOKBOOK / "qa.jsonl").open(encoding="utf-8"):
            question = json.loads(line)
            passages = [p for p in corpus if p["title"].split()[-1] in question["question"]]
            out.write(json.dumps({**question, "ctxs": passages}) + "\n")
    return path


def load_ragas(path: Path) -> str:
    """The export as a ragas `EvaluationDataset`, or how to install ragas."""
    if importlib.util.find_spec("ragas") is None:
        return f"ragas is not installed (pip install ragas); then: EvaluationDataset.from_jsonl({str(path)!r})"
    from ragas import EvaluationDataset

    dataset = EvaluationDataset.from_jsonl(str(path))
    return f"ragas: {dataset!r}"


def load_deepeval(path: Path) -> str:
    """The export as deepeval goldens, or how to install deepeval."""
    if importlib.util.find_spec("deepeval") is None:
        return (f"deepeval is not installed (pip install deepeval); then: "
                f"EvaluationDataset().add_goldens_from_jsonl_file({str(path)!r})")
    os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")  # this example stays offline
    from deepeval.dataset import EvaluationDataset

    dataset = EvaluationDataset()
    dataset.add_goldens_from_jsonl_file(str(path))
    first = dataset.goldens[0]
    return (f"deepeval: {len(dataset.goldens)} goldens; the first: {first.input!r}, CRAG "
            f"{first.additional_metadata['crag']['action']}")


def main(out: Path) -> list[str]:
    out.mkdir(parents=True, exist_ok=True)
    data, run = write_data(out / "data.jsonl"), out / "run.jsonl"
    run.unlink(missing_ok=True)  # crag run resumes an output it finds; this example starts afresh
    said = []
    for command in (["run", "--data", str(data), "--out", str(run)],
                    ["export", str(run), "--format", "ragas", "-o", str(out / "ragas.jsonl"), "--data", str(data)],
                    ["export", str(run), "--format", "deepeval", "-o", str(out / "deepeval.jsonl"), "--data",
                     str(data)]):
        if crag(command) != 0:
            raise SystemExit(f"crag {' '.join(command)} failed")
    said.append(load_ragas(out / "ragas.jsonl"))
    said.append(load_deepeval(out / "deepeval.jsonl"))
    for line in said:
        print(line)
    return said


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("crag-export"))
