"""The upgrade path: one version for every distribution, a changelog that names the renames, and the calls
renamed in 0.2.0 still working for one release, each with a DeprecationWarning naming its new call."""

import re
from pathlib import Path

import pytest
import tomllib

import crag_shared
from crag_shared import CombinedEvaluator, Corrector, CRAGConfig, LexicalEvaluator
from crag_shared.evaluators import evaluator_spec, load_combination
from crag_shared.tools.cli import main

ROOT = Path(__file__).resolve().parents[1]
PROJECTS = ["pyproject.toml", "crag_shared/pyproject.toml", "crag_llamaindex/pyproject.toml",
            "crag_haystack/pyproject.toml", "crag_reader/pyproject.toml"]
QUESTION = "Who designed the Sydney Opera House?"
PASSAGES = ["The Sydney Opera House was designed by Jørn Utzon.", "Bees live in hives."]


def released() -> str:
    """The newest release the changelog names (the heading below "Unreleased")."""
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    return re.findall(r"^## \[(\d+\.\d+\.\d+)\]", text, re.MULTILINE)[0]


def test_every_distribution_has_the_one_version_the_changelog_released():
    version = released()
    found = {path: tomllib.loads((ROOT / path).read_text(encoding="utf-8"))["project"]["version"] for path in PROJECTS}
    assert set(found.values()) == {version} and crag_shared.__version__ == version, found
    assert tuple(map(int, version.split("."))) > (0, 1, 0)
    for adapter in ("crag_llamaindex", "crag_haystack"):
        project = tomllib.loads((ROOT / adapter / "pyproject.toml").read_text(encoding="utf-8"))["project"]
        listed = [*project["dependencies"], *(d for extra in project["optional-dependencies"].values() for d in extra)]
        pins = [d for d in listed if d.startswith("crag-shared")]
        assert pins and all(d.endswith(f"=={version}") for d in pins), pins
    core = tomllib.loads((ROOT / "crag_shared" / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert f"crag-reader=={version}" in core["optional-dependencies"]["reader"]


def test_the_changelog_names_the_renamed_calls_and_their_replacements():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert text.startswith("# Changelog") and "## [Unreleased]" in text
    for name in ("Corrector.from_config", "CRAGConfig.build()", "evaluator_spec(e)", "save_combination",
                 "load_combination", "crag-bench NAME", "crag bench NAME"):
        assert name in text, name


def test_config_build_works_and_warns_naming_corrector_from_config():
    config = CRAGConfig(evaluator="lexical", upper=0.4)
    with pytest.warns(DeprecationWarning, match=r"CRAGConfig\.build\(\) .* use Corrector\.from_config"):
        old = config.build()
    assert isinstance(old, Corrector) and old.policy.upper == 0.4
    new = Corrector.from_config(config)
    assert old.correct(QUESTION, PASSAGES).to_dict()["scores"] == new.correct(QUESTION, PASSAGES).to_dict()["scores"]


def test_evaluator_spec_property_works_and_warns_naming_evaluator_spec():
    evaluator = LexicalEvaluator()
    with pytest.warns(DeprecationWarning, match=r"evaluator\.spec .* use evaluator_spec\(evaluator\)"):
        assert evaluator.spec == evaluator_spec(evaluator) == "lexical"


def test_combination_save_and_load_work_and_warn_naming_the_new_calls(tmp_path):
    combination = CombinedEvaluator([LexicalEvaluator()], [2.0], -1.0, thresholds=(0.2, -0.6))
    path = tmp_path / "combination.json"
    with pytest.warns(DeprecationWarning, match=r"CombinedEvaluator\.save\(path\) .* use save_combination"):
        combination.save(path)
    with pytest.warns(DeprecationWarning, match=r"CombinedEvaluator\.load\(path\) .* use load_combination"):
        loaded = CombinedEvaluator.load(path)
    assert loaded.score(QUESTION, PASSAGES) == load_combination(path).score(QUESTION, PASSAGES) == \
        combination.score(QUESTION, PASSAGES)


def test_the_renamed_calls_warn_at_the_callers_line():
    with pytest.warns(DeprecationWarning) as caught:
        assert LexicalEvaluator().spec == "lexical"
    assert Path(caught[0].filename).name == "test_upgrade.py"


def test_crag_bench_says_to_run_crag_bench(capsys):
    assert main(["bench", "recall", "--queries", "5"]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "run `crag-bench recall --queries 5`" in error
    assert main(["bench"]) == 2 and "run `crag-bench NAME`" in capsys.readouterr().err
