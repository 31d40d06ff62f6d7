"""Where crag keeps files it derives (ONNX exports, benchmark models): $CRAG_CACHE, else ~/.cache/crag."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir(*parts: str) -> Path:
    """A path under the cache root, read from the environment at call time."""
    return Path(os.environ.get("CRAG_CACHE") or Path.home() / ".cache" / "crag", *parts)
