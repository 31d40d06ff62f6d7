"""The house's import rules, checked on the source: the runtime never imports tooling or test support, and the
adapters' runtime reaches the core through its one adapter-facing module."""

import ast
from pathlib import Path

import layering
import pytest
from layering import runtime_files

ROOT = Path(__file__).resolve().parents[1]
TOOLING = ("crag_shared.tools", "crag_shared.testing")


def imports(path: Path) -> list[str]:
    """Every module `path` imports, relative imports resolved to absolute names."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    if path.name == "__init__.py":
        package = ".".join(path.relative_to(ROOT).parent.parts)
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.append(module)
            found += [f"{module}.{alias.name}" for alias in node.names]
    return found


def test_the_runtime_never_imports_tooling():
    offenders = {str(p.relative_to(ROOT)): m for p in runtime_files("crag_shared") for m in imports(p)
                 if m.startswith(TOOLING)}
    assert offenders == {}


def test_tooling_resolves_to_real_modules():
    import importlib

    for path in (ROOT / "crag_shared" / "tools").rglob("*.py"):
        for module in imports(path):
            if module.startswith("crag_shared."):
                try:
                    importlib.import_module(module)
                except ModuleNotFoundError:  # `from pkg import name`: the name need not be a module
                    importlib.import_module(module.rsplit(".", 1)[0])


def test_the_adapters_reach_the_core_through_its_adapter_module_only():
    offenders = {}
    for package in ("crag_llamaindex", "crag_haystack"):
        for path in runtime_files(package):
            used = {m for m in imports(path) if m.startswith("crag_shared")}
            stray = {m for m in used if m != "crag_shared.adapter" and not m.startswith("crag_shared.adapter.")}
            if stray:
                offenders[str(path.relative_to(ROOT))] = sorted(stray)
    assert offenders == {}
    for package in ("crag_llamaindex", "crag_haystack"):  # their test support may use the core's test support
        support = {m for m in imports(ROOT / package / "testing.py") if m.startswith("crag_shared")}
        assert all(m.startswith(("crag_shared.adapter", "crag_shared.testing")) for m in support), support


def test_the_corrector_takes_from_the_evaluators_only_their_protocol_and_spec_table():
    """The walk judges with any evaluator: it needs the protocol and `Evaluation` (`base.py`) and the table that
    builds an evaluator from its spec and names one back (`spec.py`: the default, a spec string, `describe`).
    A backend or the English reading (lexical, t5, embedding...) would make one evaluator's knowledge
    everyone's; what the walk knows about language comes from the text wing."""
    allowed = {"crag_shared.evaluators.base", "crag_shared.evaluators.spec"}
    offenders = {module: sorted(t for t in targets if t.startswith("crag_shared.evaluators") and t not in allowed)
                 for module, targets in layering.file_graph().items() if module.startswith("crag_shared.corrector")}
    assert {module: targets for module, targets in offenders.items() if targets} == {}
    walk = layering.file_graph()["crag_shared.corrector.walk"]
    assert "crag_shared.text.follow_up" in walk  # the follow-up rule, from the text wing


def test_the_runtime_uses_no_private_attribute_of_a_library():
    """Private attributes (`transport._pool`, `response._content`) change without notice between releases;
    a private attribute used on anything but `self` must be one that our own code defines."""
    trees = {path: ast.parse(path.read_text(encoding="utf-8"))
             for package in ("crag_shared", "crag_llamaindex", "crag_haystack") for path in runtime_files(package)}
    attributes = [(path, node) for path, tree in trees.items() for node in ast.walk(tree)
                  if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")]
    ours = {node.attr for _, node in attributes
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")}
    ours |= {node.name for tree in trees.values() for node in ast.walk(tree)
             if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    ours |= {target.id for tree in trees.values() for cls in ast.walk(tree) if isinstance(cls, ast.ClassDef)
             for node in cls.body if isinstance(node, (ast.Assign, ast.AnnAssign))
             for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
             if isinstance(target, ast.Name)}
    offenders = [f"{path.relative_to(ROOT)}:{node.lineno} .{node.attr}" for path, node in attributes
                 if node.attr not in ours]
    assert offenders == []


def test_modules_and_functions_stay_small():
    """No module over 400 lines; no function over 60 lines of code (its docstring not counted)."""
    large = {}
    for package in ("crag_shared", "crag_llamaindex", "crag_haystack"):
        for path in (ROOT / package).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            name = str(path.relative_to(ROOT))
            if len(text.splitlines()) > 400:
                large[name] = len(text.splitlines())
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    body = node.body
                    doc = body[0] if body and isinstance(body[0], ast.Expr) and isinstance(
                        getattr(body[0], "value", None), ast.Constant) else None
                    lines = node.end_lineno - node.lineno + 1 - ((doc.end_lineno - doc.lineno + 1) if doc else 0)
                    if lines > 60:
                        large[f"{name}:{node.name}"] = lines
    assert large == {}


def test_every_public_name_has_a_docstring():
    undocumented = []
    for package in ("crag_shared", "crag_llamaindex", "crag_haystack"):
        for path in (ROOT / package).rglob("*.py"):
            if any(part.startswith("_") and part != "__init__.py" for part in path.relative_to(ROOT).parts):
                continue

            def visit(body, prefix, path=path):
                for node in body:
                    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
                    if isinstance(node, kinds) and not node.name.startswith("_"):
                        if not ast.get_docstring(node):
                            undocumented.append(f"{path.relative_to(ROOT)}:{node.lineno} {prefix}{node.name}")
                        if isinstance(node, ast.ClassDef):
                            visit(node.body, f"{prefix}{node.name}.")

            visit(ast.parse(path.read_text(encoding="utf-8")).body, "")
    assert undocumented == []


def test_the_haystack_wheel_installs_the_components_canonical_homes(tmp_path):
    """`haystack_integrations.components.<kind>.crag`, namespace portions beside other integrations."""
    import subprocess
    import sys
    import zipfile

    pytest.importorskip("hatchling")
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path),
                    str(ROOT / "crag_haystack")], check=True, capture_output=True)
    names = zipfile.ZipFile(next(tmp_path.glob("crag_haystack-*.whl"))).namelist()
    homes = {n.split("/")[2] for n in names if n.startswith("haystack_integrations/components/")}
    assert homes == {"rankers", "routers", "websearch", "query", "builders", "retrievers", "generators"}
    assert not any(n.endswith(("haystack_integrations/__init__.py", "components/__init__.py")) and
                   n.startswith("haystack_integrations") for n in names)
    assert "crag_haystack/components/crag.py" in names


def test_the_llamaindex_wheel_also_installs_llama_index_postprocessor_crag(tmp_path):
    """LlamaIndex's integration naming (`llama_index.<kind>.<name>`) from `pip install crag-llamaindex`: a
    namespace portion that merges with llama-index-core's `llama_index` instead of shadowing it."""
    import subprocess
    import sys
    import zipfile

    pytest.importorskip("hatchling")
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path),
                    str(ROOT / "crag_llamaindex")], check=True, capture_output=True)
    wheel = next(tmp_path.glob("crag_llamaindex-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "llama_index/postprocessor/crag/__init__.py" in names
    assert not any(n in names for n in ("llama_index/__init__.py", "llama_index/postprocessor/__init__.py"))
    assert "crag_llamaindex/postprocessor.py" in names and "crag_llamaindex/py.typed" in names
    target = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(target)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from llama_index.postprocessor.crag import "
            "CRAGPostprocessor; import llama_index.core; print(CRAGPostprocessor.__module__, "
            "sys.modules['crag_llamaindex'].__file__.startswith(sys.argv[1]))")
    shown = subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True, text=True, check=True)
    assert shown.stdout.split() == ["crag_llamaindex.postprocessor", "True"]


def test_the_core_wheel_ships_the_language_tables(tmp_path):
    """Every table of the text wing is in the crag-shared wheel, and the wheel's own copy reads them."""
    import subprocess
    import sys
    import zipfile

    from crag_shared.text.words import STOPWORDS

    pytest.importorskip("hatchling")
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path),
                    str(ROOT / "crag_shared")], check=True, capture_output=True)
    wheel = next(tmp_path.glob("crag_shared-*.whl"))
    tables = {str(p.relative_to(ROOT)) for p in (ROOT / "crag_shared" / "text" / "tables").rglob("*.txt")}
    assert len(tables) > 10 and tables <= set(zipfile.ZipFile(wheel).namelist())
    target = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(target)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import crag_shared.text as text; "
            "print(text.__file__.startswith(sys.argv[1]), text.follow_up_pronoun('Wann wurde sie geboren?', 'de'), "
            "len(text.analyzer('en').stopwords), ' '.join(text.follow_up_languages()))")
    shown = subprocess.run([sys.executable, "-I", "-c", code, str(target)], capture_output=True, text=True, check=True)
    assert shown.stdout.split() == ["True", "sie", str(len(STOPWORDS)), "de", "en", "es", "fr"]


# -- layers: the picture in docs/layout.md is drawn from these same imports (tests/layering.py) ---------------

def test_no_import_circles_between_files_or_rooms():
    """Every import counts here, lazy ones and those for typing only: a circle is a circle all the same."""
    assert layering.circles(layering.file_graph()) == []
    assert layering.circles(layering.room_graph()) == []


def test_at_most_seven_floors_and_no_arrow_runs_back_up():
    graph = layering.room_graph()
    floor = layering.floors(graph)
    assert max(floor.values()) <= 7, floor
    upward = [(room, target) for room, targets in graph.items() for target in targets if floor[target] >= floor[room]]
    assert upward == []


def test_the_core_never_imports_an_adapter_or_the_benchmarks():
    stray = {module: sorted(t for t in targets if not t.startswith("crag_shared"))
             for module, targets in layering.file_graph().items() if module.startswith("crag_shared")}
    assert {module: targets for module, targets in stray.items() if targets} == {}


def test_no_shipped_code_looks_for_the_bench_data():
    """The bench data lies beside the checkout; only benchmarks/ (no wheel ships it) may look for it there."""
    shipped = [path for package in ("crag_shared", "crag_llamaindex", "crag_haystack")
               for path in (ROOT / package).rglob("*.py")]
    assert [str(p.relative_to(ROOT)) for p in shipped if '"shared"' in p.read_text() or "../shared" in
            p.read_text()] == []


def test_the_layout_picture_is_drawn_from_todays_imports():
    assert layering.PICTURE.read_text(encoding="utf-8") == layering.render(), \
        "the layers changed: run `python tests/layering.py` and commit docs/layout.svg"


def test_the_layout_page_names_every_room():
    page = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")
    missing = [room for room in layering.room_graph() if f"`{room.removeprefix('crag_shared/')}`" not in page]
    assert missing == []
