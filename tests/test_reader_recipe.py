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


def test_the_shipped_weights_carry_the_record_of_their_run():
    """Beside the weights: how they were made (recipe, pairs per source and kind, seeds, versions, hardware,
    validation history), and no training source whose licence its repository does not state."""
    record = json.loads((SHIPPED / "model" / "training_run.json").read_text())
    assert record["pairs"] == sum(record["pairs_by_source"].values()) == sum(record["pairs_by_kind"].values())
    assert record["mix"]["popqa_web"] == 0 and "popqa_web" not in record["pairs_by_source"]
    assert {"squad2_llm", "blindspots"} <= set(record["pairs_by_source"]), "trained on the LLM judge's labels"
    assert record["history"][-1]["step"] == record["steps"] and record["hardware"]["cpus"]
    assert "/" not in json.loads((SHIPPED / "model" / "crag_onnx.json").read_text())["source"], "a run's name, no path"


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


def squad_articles():
    from benchmarks.reader.squad import Article, Paragraph, Question

    harbour = Article("Harbour", [
        Paragraph("The harbour of Tolvik was dredged in 1871. Its lighthouse was built by Anna Lund in 1889.",
                  [Question("q-built", "Who built the lighthouse of Tolvik?", ["Anna Lund"], False),
                   Question("q-demolished", "Who demolished the lighthouse of Tolvik?", [], True)]),
        Paragraph("Ferries leave the harbour for Sande twice a day; the crossing takes forty minutes.")])
    closed = Question("q-mill", "When did the paper mill of Tolvik close?", ["1962"], False)
    mill = Article("Mill", [Paragraph("The paper mill of Tolvik closed in 1962 after a fire.", [closed])])
    return [harbour, mill]


def test_squad2_questions_are_judged_on_their_retrieved_paragraphs_and_stored_without_their_text(tmp_path):
    """SQuAD 2.0's questions bring BM25's paragraphs; the LLM's verdict labels each, SQuAD's own label stands
    where it gave none, and the contexts beside the labels name paragraphs without copying them."""
    from benchmarks.reader import squad_labels

    articles = squad_articles()
    found = squad_labels.retrieve(articles, questions=2, top_k=2)
    assert sorted(r.question.impossible for r in found) == [False, True], "half written unanswerable"
    assert all(r.own in r.passages or r.question.id == "q-mill" for r in found)
    prompts, contexts = tmp_path / "prompts.jsonl", tmp_path / "contexts.jsonl"
    assert squad_labels.write_prompts(prompts, articles, found, contexts) == 2
    assert "lighthouse" not in contexts.read_text() and "Harbour" in contexts.read_text()
    rows = [json.loads(line) for line in prompts.read_text().splitlines()]
    listed = {r["question_id"]: r for r in map(json.loads, contexts.read_text().splitlines())}
    assert {r["key"] for r in rows} == {r["key"] for r in listed.values()}
    assert all("<document" in r["prompt"] for r in rows)

    answerable = next(r for r in found if not r.question.impossible)
    recording = tmp_path / "replies.jsonl"
    reply = "\n".join(f"{i}: no" for i, _ in enumerate(listed[answerable.question.id]["passages"], 1))
    recording.write_text(json.dumps({"key": listed[answerable.question.id]["key"], "reply": reply}) + "\n")
    pairs = squad_labels.squad2_llm_pairs(articles, recording, contexts)
    by_question = {}
    for pair in pairs:
        by_question.setdefault(pair.query_id, []).append(pair)
    judged = by_question[f"squad2-llm-{answerable.question.id}"]
    assert all(not p.relevant and p.kind.endswith(":llm") for p in judged), "the LLM's 'no' overrides SQuAD's own label"
    unjudged = next(v for k, v in by_question.items() if k != f"squad2-llm-{answerable.question.id}")
    assert all(p.kind.endswith(":gold") for p in unjudged)
    expected = [not found_one.question.impossible and p == found_one.own
                for found_one in found if f"squad2-llm-{found_one.question.id}" == unjudged[0].query_id
                for p in found_one.passages]
    assert [p.relevant for p in unjudged] == expected


def test_no_squad2_question_the_llm_labelled_comes_from_the_near_miss_benchmarks_test_half(bench_dir):
    """The SQuAD 2.0 questions the LLM judged for training: none is a question of `qa_pairs.jsonl`'s eval split,
    and an article holding one is left out whole (its paragraphs are neither asked about nor searched)."""
    from benchmarks.reader.data import held_titles
    from benchmarks.reader.squad import Article, Paragraph, Question
    from benchmarks.reader.squad_labels import CONTEXTS

    rows = [json.loads(line) for line in (bench_dir / "qa_pairs.jsonl").open(encoding="utf-8")]
    held_ids = {r["question_id"] for r in rows if r["split"] == "eval"}
    labelled = [json.loads(line) for line in CONTEXTS.open(encoding="utf-8")]
    assert len(labelled) == 800 and not {r["question_id"] for r in labelled} & held_ids
    held = Article("Held", [Paragraph("text", [Question("other", "Q?", [], True),
                                               Question(sorted(held_ids)[0], "Q?", ["a"], False)])])
    free = Article("Free", [Paragraph("text", [Question("mine", "Q?", ["a"], False)])])
    assert held_titles([held, free], bench_dir) == {"Held"}
