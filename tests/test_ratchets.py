"""Ratchets that only fall: the `Any` count may not rise above the figure the last release recorded in
CHANGELOG.md, nor the public names above the newest figure CHANGELOG.md records; and every test that runs a
benchmark is marked `slow` (CI runs those in their own step), so the default run stays short."""

import ast
import re
from pathlib import Path

import layering

ROOT = Path(__file__).resolve().parents[1]
RUNTIMES = ("crag_shared", "crag_llamaindex", "crag_haystack")
#: The benchmarks' entry points: a test that imports one of these from `benchmarks` runs a benchmark.
BENCHMARK_RUNS = frozenset({"run", "table", "large_run", "device_rows"})


def released_any() -> tuple[str, int]:
    """(version, figure): the newest release in CHANGELOG.md and the `Any` count it records."""
    sections = re.split(r"^## \[", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), flags=re.MULTILINE)[1:]
    newest = next(section for section in sections if not section.startswith("Unreleased"))
    version = newest.split("]", 1)[0]
    figure = re.search(r"`Any` appears (\d+) times", newest)
    assert figure, f"CHANGELOG.md: release {version} records no `Any` figure"
    return version, int(figure.group(1))


def test_any_never_rises_above_the_last_released_figure():
    """Only a release records a new figure (the count that day), so the commit that adds uses cannot raise it."""
    version, ceiling = released_any()
    counts = layering.any_uses(path for package in RUNTIMES for path in layering.runtime_files(package))
    assert sum(counts.values()) <= ceiling, (
        f"`Any` appears {sum(counts.values())} times in the runtimes, above the {ceiling} of release {version}: "
        "remove as many uses as you add", sorted(counts.items(), key=lambda item: -item[1])[:10])


def test_the_layout_page_quotes_the_released_figure():
    version, ceiling = released_any()
    page = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")
    assert f"`Any` appears {ceiling} times" in page and f"the last release, {version}," in page


def recorded_public_names() -> int:
    """The newest figure of public names in CHANGELOG.md (the unreleased changes' first, where they lower it)."""
    figures = re.findall(r"the three packages offer (\d+) public names", (ROOT / "CHANGELOG.md").read_text("utf-8"))
    assert figures, "CHANGELOG.md records no figure of public names"
    return int(figures[0])


def test_public_names_never_rise_above_the_recorded_figure():
    """A module's helpers stay out of its `__all__` unless users need them: the public face only shrinks."""
    ceiling = recorded_public_names()
    counts = layering.public_names(path for package in RUNTIMES for path in (ROOT / package).rglob("*.py"))
    assert sum(counts.values()) <= ceiling, (
        f"the three packages offer {sum(counts.values())} public names, above the recorded {ceiling}: give the "
        "new module an `__all__` of what users need", sorted(counts.items(), key=lambda item: -item[1])[:10])
    page = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")
    assert f"offer {ceiling} public names" in page


def _slow(decorator: ast.expr) -> bool:
    return ast.unparse(decorator).startswith("pytest.mark.slow")


def test_every_test_that_runs_a_benchmark_is_slow():
    offenders = []
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module_slow = any(isinstance(node, ast.Assign) and _slow(node.value)
                          and any(getattr(target, "id", "") == "pytestmark" for target in node.targets)
                          for node in tree.body)
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef) or not node.name.startswith("test_"):
                continue
            runs = {alias.name for sub in ast.walk(node) if isinstance(sub, ast.ImportFrom)
                    and (sub.module or "").split(".")[0] == "benchmarks" for alias in sub.names
                    if alias.name in BENCHMARK_RUNS}
            if runs and not module_slow and not any(_slow(d) for d in node.decorator_list):
                offenders.append(f"{path.name}::{node.name}")
    assert offenders == []
