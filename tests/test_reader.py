"""The reader, crag's trained answerability judge: the shipped weights load offline and judge paraphrased answers,
the spec "reader" works everywhere an evaluator is accepted, and "default" is the reader blended with the lexical
judge exactly where it should be (English, the distribution installed, not pinned)."""

import json
import shutil
import subprocess
import sys

import pytest

from crag_shared import Corrector, CRAGConfig, EvaluatorConfigurationError, evaluator_from_spec, evaluator_spec
from crag_shared.evaluators import CombinedEvaluator, LexicalEvaluator, ReaderEvaluator
from crag_shared.evaluators.default import DEFAULT_ENV, default_evaluator
from crag_shared.evaluators.onnx_export import MANIFEST, export_onnx
from crag_shared.trace import Input

pytest.importorskip("onnxruntime")

MIDDLEMARCH = "Who wrote Middlemarch?"
ELIOT = "Middlemarch is a novel by George Eliot, first published in eight instalments in 1871 and 1872."
NUNEATON = "George Eliot was born Mary Ann Evans at South Farm on the Arbury Hall estate near Nuneaton."


@pytest.fixture
def unpinned(monkeypatch):
    """The default judge as a user meets it: the suite's pin to the lexical judge lifted."""
    monkeypatch.delenv(DEFAULT_ENV, raising=False)


def test_the_default_judge_is_the_shipped_reader_blended_with_the_lexical_and_keeps_a_paraphrased_answer(unpinned):
    corrector = Corrector()
    blend = corrector.evaluator
    assert type(blend) is CombinedEvaluator and evaluator_spec(blend) == "combined:reader-lexical"
    assert [type(m) for m in blend.members] == [ReaderEvaluator, LexicalEvaluator] and blend.members[0].shipped
    assert (corrector.policy.upper, corrector.policy.lower) == blend.thresholds
    result = corrector.correct(MIDDLEMARCH, [NUNEATON, ELIOT])
    assert result.action.value == "correct" and "George Eliot" in result.knowledge_text
    assert result.scores[1] > result.thresholds[0] > result.scores[0]  # the birthplace names her, no answer
    assert result.trace.of(Input)[0].evaluator == "combined:reader-lexical"
    alone = Corrector(evaluator="reader").correct(MIDDLEMARCH, [ELIOT])
    assert alone.action.value == "correct" and "George Eliot" in alone.knowledge_text


def test_the_default_judge_and_the_reader_read_a_passage_with_its_title(unpinned):
    """A section whose subject only its heading names (LlamaIndex metadata, Haystack meta `title`) is read as
    "title: text", as the reader was trained; `score_titles` stays off for the judges a user names."""
    from crag_shared.types import Passage

    question, text = "When was the Tolvik lighthouse built?", "It was built in 1889 by the harbour board."
    for judge in (Corrector(), Corrector(evaluator="reader")):
        assert judge.evaluator.reads_titles
        titled, bare = (judge.judge(question, [Passage(text, title=title)]).scores[0]
                        for title in ("Tolvik lighthouse", None))
        assert titled > bare + 0.5
    assert not Corrector(evaluator="lexical").evaluator.reads_titles


def test_the_reader_tells_an_answer_from_a_near_miss_of_another_plan(unpinned):
    reader = ReaderEvaluator()
    scores = reader.score("What is the rate limit of the Team plan?", [
        "Rate limits. The Team plan allows 600 requests per minute, shared by all members of the workspace.",
        "Rate limits. The Pro plan allows 1,000 requests per minute; the Enterprise plan has no fixed limit."])
    assert scores[0] > scores[1]


def test_default_is_the_lexical_judge_for_other_languages_and_when_pinned(unpinned, monkeypatch):
    german = default_evaluator("de")
    assert type(german) is LexicalEvaluator and german.language == "de"
    assert type(Corrector.from_config(CRAGConfig(language="de")).evaluator) is LexicalEvaluator
    monkeypatch.setenv(DEFAULT_ENV, "lexical")
    assert type(evaluator_from_spec("default")) is LexicalEvaluator
    monkeypatch.setenv(DEFAULT_ENV, "default")
    with pytest.raises(ValueError, match="names the default itself"):
        evaluator_from_spec("default")


def test_without_the_distribution_the_default_is_lexical_and_the_reader_says_what_to_install(tmp_path):
    script = """
import logging, sys
sys.modules["crag_reader"] = None  # as if crag-reader were not installed
logging.basicConfig(level=logging.INFO, stream=sys.stdout)
from crag_shared.evaluators import evaluator_from_spec
print(type(evaluator_from_spec("default")).__name__)
try:
    evaluator_from_spec("reader")
except ImportError as error:
    print("ImportError:", error)
"""
    env = {k: v for k, v in __import__("os").environ.items() if k != DEFAULT_ENV}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120).stdout
    assert "LexicalEvaluator" in out and "judging with the lexical evaluator" in out
    assert ("ImportError: the reader judge ships in the crag-reader distribution: "
            "pip install 'crag-shared[reader]'") in out


def test_reader_specs_round_trip_and_name_what_is_wrong(tmp_path):
    shipped = evaluator_from_spec("reader")
    assert type(shipped) is ReaderEvaluator and evaluator_spec(shipped) == "reader"
    own = tmp_path / "my-reader"
    shutil.copytree(shipped.model_name, own)
    mine = evaluator_from_spec(f"reader:{own}")
    assert evaluator_spec(mine) == f"reader:{own}" and not mine.shipped
    assert mine.score(MIDDLEMARCH, [ELIOT]) == shipped.score(MIDDLEMARCH, [ELIOT])
    (own / MANIFEST).unlink()
    with pytest.raises(EvaluatorConfigurationError, match="not a reader export"):
        ReaderEvaluator(own)
    with pytest.raises(ValueError, match="no such file or directory"):
        evaluator_from_spec(f"reader:{tmp_path / 'missing'}")


@pytest.mark.slow
def test_a_reader_of_your_own_carries_its_thresholds_and_int8_embeddings(tiny_bert, tmp_path):
    export = export_onnx(str(tiny_bert), tmp_path / "export", quantize=True, int8_embeddings=True)
    config = json.loads((export / "config.json").read_text())
    config["crag_thresholds"] = [0.25, -0.75]
    (export / "config.json").write_text(json.dumps(config))
    reader = ReaderEvaluator(export)
    assert reader.thresholds == (0.25, -0.75)
    assert ReaderEvaluator(export, thresholds=(0.1, -0.2)).thresholds == (0.1, -0.2)
    assert json.loads((export / MANIFEST).read_text())["int8_embeddings"]
    assert len(reader.score("a question", ["a passage", "another passage"])) == 2


def test_the_reader_spec_through_every_entry_point(tmp_path):
    from haystack import Pipeline

    from crag_haystack import CRAG
    from crag_llamaindex import CRAGPostprocessor
    from crag_shared.tools.cli import main

    postprocessor = CRAGPostprocessor(evaluator="reader")
    assert type(postprocessor.corrector.evaluator) is ReaderEvaluator
    assert CRAGPostprocessor.from_dict(postprocessor.to_dict()).to_dict()["config"]["evaluator"] == "reader"
    pipeline = Pipeline()
    pipeline.add_component("crag", CRAG(evaluator="reader"))
    loaded = Pipeline.loads(pipeline.dumps())
    assert "evaluator: reader" in pipeline.dumps()
    assert type(loaded.get_component("crag").corrector.evaluator) is ReaderEvaluator
    data, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    row = {"id": 1, "question": MIDDLEMARCH, "ctxs": [{"text": NUNEATON}, {"text": ELIOT}]}
    data.write_text(json.dumps(row) + "\n")
    assert main(["run", "--data", str(data), "--out", str(out), "--evaluator", "reader"]) == 0
    record = json.loads(out.read_text())
    assert record["action"] == "correct" and "George Eliot" in json.dumps(record["strips"])
