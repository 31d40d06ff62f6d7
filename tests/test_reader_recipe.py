"""The reader's recipe on tiny data (pairs, training, export, run record), its held-out questions, and its shipped
files as an artefact: a card whose front matter a model hub reads, no machine's path, an honest config."""

import json
import re
from importlib.resources import files
from pathlib import Path

import pytest
import yaml

ABSOLUTE_PATH = re.compile(r"(?<![\w.:/])/(?:work|home|tmp|root|Users|mnt|var|opt|scratch)/")
SHIPPED = Path(str(files("crag_reader")))


def shipped_text_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and p.suffix in {".json", ".md", ".txt", ".py", ".toml"}]


def front_matter(card: str) -> dict:
    assert card.startswith("---\n"), "the card starts with YAML front matter"
    return yaml.safe_load(card.split("\n---\n", 1)[0][4:])


def test_the_reader_card_front_matter_is_what_a_model_hub_reads():
    meta = front_matter((SHIPPED / "README.md").read_text(encoding="utf-8"))
    assert meta["license"] == "apache-2.0"
    assert meta["base_model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert meta["library_name"] == "crag"
    assert "en" in meta["language"] and meta["pipeline_tag"] == "text-classification"
    assert {"squad", "squad_v2"} <= set(meta["datasets"])
    assert meta["model-index"][0]["results"], "the card's figures are machine-readable too"


def test_no_shipped_file_names_a_path_of_the_machine_it_was_built_on():
    found = [str(p.relative_to(SHIPPED)) for p in shipped_text_files(SHIPPED)
             if ABSOLUTE_PATH.search(p.read_text(encoding="utf-8"))]
    assert found == []


def test_the_shipped_config_declares_no_pytorch_class():
    config = json.loads((SHIPPED / "model" / "config.json").read_text())
    assert not config.get("architectures"), "the reader is an ONNX graph with mean pooling, not a PyTorch head"
    assert config["crag_pooling"] == "mean"


@pytest.mark.slow
def test_the_recipe_trains_exports_and_records_its_run_on_tiny_data(tmp_path, tiny_bert, bench_dir):
    from benchmarks.reader.data import Mix
    from benchmarks.reader.recipe import RUN_RECORD, Recipe, export_reader, train_reader
    from crag_shared.evaluators import evaluator_from_spec

    recipe = Recipe(layers=2, steps=4, batch_size=4, max_length=64, bf16=False, threads=1)
    mix = Mix(qa_pairs=True, written_repeats=1, blindspots=0.1)
    out = tmp_path / "run"
    summary = train_reader(out, bench_dir, squad=None, recipe=recipe, mix=mix, base=str(tiny_bert),
                           log=lambda *_: None)
    assert summary["steps"] == 4 and summary["history"]
    assert {"qa_pairs", "blindspots"} <= set(summary["pairs_by_source"])
    assert summary["pairs"] == sum(summary["pairs_by_source"].values())
    assert json.loads((out / RUN_RECORD).read_text()) == summary

    export = export_reader(out, tmp_path / "export")
    assert json.loads((export / RUN_RECORD).read_text()) == summary
    assert json.loads((export / "crag_onnx.json").read_text())["source"] == "run"
    assert not json.loads((export / "config.json").read_text()).get("architectures")
    assert [p.name for p in shipped_text_files(export) if ABSOLUTE_PATH.search(p.read_text())] == []
    scores = evaluator_from_spec(f"onnx:{export}").score("who wrote it?", ["a passage", "another passage"])
    assert len(scores) == 2 and all(-1.0 <= s <= 1.0 for s in scores)


def test_no_training_pair_comes_from_a_held_out_question():
    """The blind-spot sets' test and validation domains, and every judge set outside `train/`, give no pair (an
    off-topic question such as "What is the capital of Mongolia?" may stand in several domains, answered in none)."""
    from benchmarks.reader.data import written_train_sets
    from benchmarks.reader.labelling import blindspot_pairs, halves
    from benchmarks.reader.recipe import WRITTEN

    trained = blindspot_pairs("train")
    assert {p.kind.rsplit(":", 1)[-1] for p in trained} >= {"llm", "echo", "instruction"}
    train_domains = {name for name, half in halves().items() if half == "train"}
    assert all(any(p.query_id.startswith(f"blindspots-{name}-") for name in train_domains) for p in trained)
    seen = {p.query for p in trained}
    for split in ("valid", "test"):
        held = {p.query for p in blindspot_pairs(split) if p.relevant}
        assert held and not seen & held, split
    assert all(folder.parent == WRITTEN for folder in written_train_sets(WRITTEN))
