"""The house's layers, read from the code's imports: rooms, their floors, circles, and the picture in the docs.

A room is one folder of `crag_shared` (corrector/, evaluators/, web/, tools/, testing/, demo/, calibration/,
text/), one top-level module of it, one adapter package, or benchmarks/. A room's floor is one above the highest
room it imports.
Every import counts: at the top of a file, inside a function, or for typing only.

`python tests/layering.py` rewrites docs/layout.svg; tests/test_layout.py fails when it is out of date.
"""

from __future__ import annotations

import ast
import html
from collections.abc import Iterable
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("crag_shared", "crag_llamaindex", "crag_haystack", "benchmarks")
FOLDER_ROOMS = ("corrector", "evaluators", "web", "tools", "testing", "demo", "calibration", "text", "policy")
PICTURE = ROOT / "docs" / "layout.svg"


def module_name(path: Path) -> str:
    """`crag_shared/web/base.py` -> `crag_shared.web.base`; a package's `__init__.py` is the package."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if "namespace" in parts:  # the adapters' namespace portions re-export their own package
        parts = [*parts[: parts.index("namespace")], "namespace"]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def project_files() -> dict[str, Path]:
    """Every module of the four packages, by name (the namespace portions count as their package's)."""
    return {module_name(path): path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))}


def _resolve(name: str) -> str | None:
    """The project module `name` is, or lies in (`pkg.mod.attr` -> `pkg.mod`); None outside the project."""
    files = project_files()
    while name:
        if name in files:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(path: Path) -> set[str]:
    """The project modules `path` imports, anywhere in it, relative imports resolved."""
    own = module_name(path)
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    found: set[str | None] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {_resolve(alias.name) for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join([*base, node.module] if node.module else base)
            found |= {_resolve(f"{module}.{alias.name}") for alias in node.names}
    return {name for name in found if name and name != own}


def room_of(module: str) -> str:
    """The room a module stands in, named as in the picture."""
    parts = module.split(".")
    if parts[0] != "crag_shared":
        return f"{parts[0]}/"
    if len(parts) == 1:
        return "crag_shared/__init__.py"
    return f"crag_shared/{parts[1]}/" if parts[1] in FOLDER_ROOMS else f"crag_shared/{parts[1]}.py"


@cache
def file_graph() -> dict[str, frozenset[str]]:
    """module -> the project modules it imports."""
    return {name: frozenset(imports_of(path)) for name, path in project_files().items()}


@cache
def room_graph() -> dict[str, frozenset[str]]:
    """room -> the other rooms it imports."""
    rooms: dict[str, set[str]] = {}
    for module, targets in file_graph().items():
        here = room_of(module)
        rooms.setdefault(here, set()).update(room_of(t) for t in targets if room_of(t) != here)
    return {room: frozenset(targets) for room, targets in rooms.items()}


def circles(graph: dict[str, frozenset[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def floors(graph: dict[str, frozenset[str]]) -> dict[str, int]:
    """Each room's floor: 1 for a room that imports no other, else one above its highest import."""
    floor: dict[str, int] = {}

    def of(room: str) -> int:
        if room not in floor:
            floor[room] = 0  # a circle would stop here; `circles` reports it
            floor[room] = 1 + max((of(t) for t in graph.get(room, ())), default=0)
        return floor[room]

    for room in graph:
        of(room)
    return floor


def shortcut_free(graph: dict[str, frozenset[str]]) -> dict[str, set[str]]:
    """The arrows no longer way implies (what the picture draws)."""
    def reaches(start: str, goal: str, skip: str) -> bool:
        seen, todo = set(), [t for t in graph.get(start, ()) if t != skip]
        while todo:
            node = todo.pop()
            if node == goal:
                return True
            if node not in seen:
                seen.add(node)
                todo.extend(graph.get(node, ()))
        return False

    return {room: {t for t in targets if not reaches(room, t, t)} for room, targets in graph.items()}


def render(graph: dict[str, frozenset[str]] | None = None) -> str:
    """The layers as an SVG: one row per floor, the top floor first, arrows that no longer way implies."""
    graph = graph if graph is not None else room_graph()
    floor = floors(graph)
    rows = [sorted(room for room in floor if floor[room] == level) for level in range(max(floor.values()), 0, -1)]
    row_height, box_height, gap = 96, 34, 14
    sizes = {room: 8.2 * len(_label(room)) + 24 for room in floor}
    width = 90 + max(sum(sizes[room] for room in row) + gap * (len(row) - 1) for row in rows)
    places: dict[str, tuple[float, float, float]] = {}
    for r, row in enumerate(rows):
        x = 80 + (width - 90 - sum(sizes[room] for room in row) - gap * (len(row) - 1)) / 2
        for room in row:
            size = sizes[room]
            places[room] = (x, 30 + r * row_height, size)
            x += size + gap
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{30 + len(rows) * row_height}" '
             f'font-family="monospace" font-size="13">',
             '<rect width="100%" height="100%" fill="white"/>']
    for room, targets in sorted(shortcut_free(graph).items()):
        x, y, size = places[room]
        for target in sorted(targets):
            tx, ty, tsize = places[target]
            parts.append(f'<line x1="{x + size / 2:.1f}" y1="{y + box_height}" x2="{tx + tsize / 2:.1f}" y2="{ty}" '
                         'stroke="#8a9bb0" stroke-width="1" stroke-opacity="0.7"/>')
    for r in range(len(rows)):
        parts.append(f'<text x="12" y="{30 + r * row_height + 22}" fill="#555">floor {len(rows) - r}</text>')
    for room, (x, y, size) in sorted(places.items()):
        fill = "#e8f0e0" if not room.startswith("crag_shared") else "#e4ecf6"
        parts.append(f'<rect x="{x:.1f}" y="{y}" width="{size:.1f}" height="{box_height}" rx="5" fill="{fill}" '
                     'stroke="#4a5d75"/>')
        parts.append(f'<text x="{x + 12:.1f}" y="{y + 22}">{html.escape(_label(room))}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _label(room: str) -> str:
    """A room's name in the picture: crag_shared's own rooms without the package's name."""
    return room.removeprefix("crag_shared/")


def runtime_files(package: str) -> list[Path]:
    """The package's runtime: all but its tooling, its test support and `__main__` (the `crag` command)."""
    return [p for p in (ROOT / package).rglob("*.py")
            if not {"tools", "testing"} & set(p.relative_to(ROOT / package).parts)
            and p.name not in ("testing.py", "__main__.py")]


def any_uses(paths: Iterable[Path]) -> dict[str, int]:
    """How often each file names `typing.Any` (its import not counted)."""
    counts = {}
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        uses = sum(1 for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id == "Any")
        uses += sum(1 for node in ast.walk(tree) if isinstance(node, ast.Attribute) and node.attr == "Any")
        if uses:
            counts[str(path.relative_to(ROOT))] = uses
    return counts


def public_names(paths: Iterable[Path]) -> dict[str, int]:
    """How many names each module offers its users: its `__all__`, else every top-level name without a leading
    underscore. Modules under a private name, packages' `__init__` (re-exports) and namespace portions not
    counted."""
    counts = {}
    for path in paths:
        parts = path.relative_to(ROOT).parts
        if path.name == "__init__.py" or "namespace" in parts or any(p.startswith("_") for p in parts):
            continue
        names: list[str] = []
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, ast.AnnAssign) else []
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                names = list(ast.literal_eval(node.value))
                break
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.append(node.name)
            names += [t.id for t in targets if isinstance(t, ast.Name)]
        counts[str(path.relative_to(ROOT))] = sum(1 for name in names if not name.startswith("_"))
    return counts


if __name__ == "__main__":
    PICTURE.write_text(render(), encoding="utf-8")
    print(f"wrote {PICTURE.relative_to(ROOT)}: {max(floors(room_graph()).values())} floors, "
          f"{len(room_graph())} rooms")
