"""Optional provider clients: a missing one is a configuration error that says how to install it."""

from __future__ import annotations

import importlib.util

__all__ = ["require"]

#: the crag-shared extra that installs each optional client
EXTRAS = {"tavily": "tavily", "exa_py": "exa", "ddgs": "ddgs"}


def require(module: str, owner: str, package: str) -> None:
    """Raise ImportError naming the pip command when `module` (for `owner`) is not installed."""
    if importlib.util.find_spec(module) is None:
        raise ImportError(f"{owner} needs {package}: pip install 'crag-shared[{EXTRAS[module]}]' "
                          f"(or pip install {package})")
