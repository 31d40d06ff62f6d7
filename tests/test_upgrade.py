"""The upgrade path: one version for every distribution, a changelog that names the renames, and the calls
renamed in 0.2.0 gone in 0.3.0, one release later."""

import re
from pathlib import Path

import tomllib

import crag_shared
from crag_shared import CombinedEvaluator, Corrector, CRAGConfig, LexicalEvaluator
from crag_shared.evaluators import evaluator_spec, load_combination

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


def test_the_calls_deprecated_in_0_2_0_are_gone_in_0_3_0():
    """docs/releases.md: a call deprecated in a minor release is removed in the next one."""
    import crag_llamaindex

    assert not hasattr(CRAGConfig, "build") and not hasattr(LexicalEvaluator(), "spec")
    assert not hasattr(CombinedEvaluator, "save") and not hasattr(CombinedEvaluator, "load")
    assert not hasattr(crag_llamaindex, "CRAGPack")
    assert Corrector.from_config(CRAGConfig(evaluator="lexical")).correct(QUESTION, PASSAGES).action.value == "correct"
    assert evaluator_spec(LexicalEvaluator()) == "lexical" and load_combination
