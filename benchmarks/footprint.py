"""`crag-bench footprint`: what `pip install` of each distribution adds to a bare virtual environment
(megabytes on disk and packages), and the largest packages it brings."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import venv
from pathlib import Path
from typing import TextIO

ROOT = Path(__file__).resolve().parents[1]

#: (what a user installs, the local requirements that install it)
ROWS = [
    ("crag-shared", ["{root}/crag_shared"]),
    ("crag-shared[detect]", ["{root}/crag_shared[detect]"]),
    ("crag-shared[onnx]", ["{root}/crag_shared[onnx]"]),
    ("crag-llamaindex", ["{root}/crag_shared", "{root}/crag_llamaindex"]),
    ("crag-haystack", ["{root}/crag_shared", "{root}/crag_haystack"]),
]


def installed(python: Path) -> dict[str, int]:
    """Bytes on disk of each installed distribution of the environment's `python` (files it records)."""
    code = ("import importlib.metadata as m, json, os\n"
            "sizes = {}\n"
            "for d in m.distributions():\n"
            "    files = [d.locate_file(f) for f in (d.files or [])]\n"
            "    sizes[d.metadata['Name'].lower()] = sum(os.path.getsize(f) for f in files if os.path.isfile(f))\n"
            "print(json.dumps(sizes))")
    import json

    return json.loads(subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout)


def measure(requirements: list[str]) -> tuple[float, int, list[tuple[str, float]]]:
    """(MB added, packages added, the five largest added packages) for installing `requirements`."""
    with tempfile.TemporaryDirectory() as place:
        venv.create(place, with_pip=True)
        python = Path(place) / "bin" / "python"
        before = installed(python)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *requirements],
                       check=True, capture_output=True)
        added = {name: size for name, size in installed(python).items() if name not in before}
    largest = sorted(added.items(), key=lambda item: -item[1])[:5]
    return sum(added.values()) / 1e6, len(added), [(name, size / 1e6) for name, size in largest]


def run(out: TextIO = sys.stdout) -> dict[str, tuple[float, int]]:
    """Measure every row; print a table and return {row: (MB, packages)}."""
    figures = {}
    out.write("crag-bench footprint: a fresh virtual environment per row (Python "
              f"{sys.version_info.major}.{sys.version_info.minor}), what pip install adds\n\n"
              "| install | MB | packages | largest |\n|---|---|---|---|\n")
    for name, requirements in ROWS:
        megabytes, count, largest = measure([r.format(root=ROOT) for r in requirements])
        figures[name] = (megabytes, count)
        biggest = ", ".join(f"{package} {size:.0f}" for package, size in largest)
        out.write(f"| `{name}` | {megabytes:.0f} | {count} | {biggest} |\n")
        out.flush()
    return figures
