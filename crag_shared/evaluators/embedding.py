"""EmbeddingEvaluator: relevance as the cosine of a bi-encoder's query and passage embeddings.

A pretrained sentence encoder knows "is this passage about what the question asks" without any training
by the user, and, unlike word overlap, it is not fooled by passages that share the question's words but
not its meaning. It is the strongest offline signal measured on unseen hard negatives (README).
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from types import MappingProxyType
from typing import Any, Literal

from ..scores import clip
from ..text.analysis import check_language
from ..text.detection import resolve
from ..text.measure import QuestionWords
from ..text.sentences import sentence_spans
from ..text.words import encodable
from .base import Evaluation, RetrievalEvaluator
from .batching import load_once
from .embedding_scale import Landmarks, carried, found_once, measure, reference
from .hf import pick_device, require_torch
from .pooling import mean_pooled

__all__ = ["SPEC_SUFFIX", "UNIT_DEFAULTS", "Embed", "EmbeddingEvaluator", "Unit", "embedding_kind"]

#: texts -> one embedding per text (a framework's embedding model, or our HF encoder)
Embed = Callable[[list[str]], list[list[float]]]


#: Per unit: (midpoint, spread, default thresholds) of all-MiniLM-L6-v2. The midpoint sits between the median
#: cosines of relevant and irrelevant pairs on qa_pairs train; the thresholds are Eq. 2's with near misses as
#: negative queries, on the tune halves of `crag-bench near-miss` (docs: Benchmarks). Another model gets
#: this mapping carried onto its own scale (`embedding_scale`); the thresholds stay.
UNIT_DEFAULTS: dict[str, tuple[float, float, tuple[float, float]]] = {
    "matched": (0.55, 0.25, (0.61, 0.3)),
    "sentence": (0.55, 0.25, (0.61, 0.3)),
    "passage": (0.3, 0.4, (0.3, -0.3)),
}
Unit = Literal["matched", "sentence", "passage"]
#: The spec of each unit is `embedding{suffix}:PATH` (`onnx-embedding{suffix}:PATH` on ONNX Runtime).
SPEC_SUFFIX: dict[str, str] = {"matched": "", "sentence": "-sentence", "passage": "-passage"}
#: Unit "matched" embeds this many sentences per text: those that best match the question's words.
MATCHED_SENTENCES = 2
#: Query embeddings kept (a framework's model): enough for every query in flight at once.
QUERY_CACHE_SIZE = 256


def embedding_kind(kind: str) -> tuple[str, str] | None:
    """(backend, unit) of an embedding spec's kind, e.g. "onnx-embedding-passage" -> ("onnx-embedding",
    "passage"); None for any other kind."""
    for backend in ("onnx-embedding", "embedding"):
        for unit, suffix in SPEC_SUFFIX.items():
            if kind == backend + suffix:
                return backend, unit
    return None


class EmbeddingEvaluator(RetrievalEvaluator):
    """Cosine of query and passage embeddings, mapped linearly to [-1, 1]: `clip((cos - midpoint) / spread)`.

    - `model`: a Hugging Face encoder (local directory or hub id), mean-pooled over its tokens and L2
      normalised, as sentence-transformers does (spec `embedding:PATH`); or
    - `embed_query` / `embed_texts`: the embedding model you already have, as functions
      (`crag_llamaindex.embedding_evaluator(embed_model)`, `crag_haystack.embedding_evaluator(...)`).
    A passage scores the cosine of its best sentence: a passage's mean embedding dilutes the one sentence
    that answers (measured in docs: Benchmarks). Which sentences are embedded is the unit:
    - `"matched"` (default, spec `embedding:PATH`): the `MATCHED_SENTENCES` sentences that best match the
      question's words (LexicalEvaluator's measure): as accurate as every sentence on the sets measured,
      for far fewer tokens, which a framework's embedding API bills. Where no sentence shares a word with
      the question, a text's first two are embedded: for paraphrase-heavy corpora use `"sentence"`;
    - `"sentence"` (`embedding-sentence:PATH`): every distinct sentence, the best of all;
    - `"passage"` (`embedding-passage:PATH`): the whole passage, one embedding.
    Each text is embedded alone (padding is masked), so a score never depends on the other texts.

    The mapping fits the model that embeds: left as None, `midpoint` and `spread` are found at first use
    on crag's reference set (`embedding_scale`), once per process and model (`model_key` names a
    framework's model; a path names itself): the model embeds every reference passage's sentences in one
    call and each of its few dozen questions once. Give both to skip it (what `crag calibrate` fits, say).
    """

    spec_prefix = "embedding"

    def __init__(self, model: str | None = None, *, embed_query: Callable[[str], list[float]] | None = None,
                 embed_texts: Embed | None = None, unit: Unit = "matched", midpoint: float | None = None,
                 spread: float | None = None, max_length: int = 256, batch_size: int = 32,
                 device: str | None = None, thresholds: tuple[float, float] | None = None,
                 local_files_only: bool = False, language: str = "en", cache_size: int = 4096,
                 model_key: str | None = None) -> None:
        if (model is None) == (embed_texts is None):
            raise ValueError("EmbeddingEvaluator needs either model=PATH or embed_texts=function")
        if unit not in UNIT_DEFAULTS:
            raise ValueError(f"unit must be one of {', '.join(map(repr, UNIT_DEFAULTS))}, got {unit!r}")
        self._unit_thresholds = UNIT_DEFAULTS[unit][2]
        if spread is not None and not spread > 0:
            raise ValueError(f"spread must be positive, got {spread}")
        self.midpoint = midpoint
        self.spread = spread
        self._scale = (midpoint, spread) if midpoint is not None and spread is not None else None
        self.model_name = None if model is None else str(model)
        # where found scales are shared: the model (not saved as a setting: the adapter passes it again)
        self._scale_key = model_key or (f"{type(self).__name__}:{model}:{max_length}" if model else None)
        self.unit = unit
        self.language = check_language(language)
        self.max_length = max_length
        self.batch_size = batch_size
        self._device = device  # as asked; `device` becomes the one the model loads on
        self.device = device
        self.local_files_only = local_files_only
        self._thresholds = (thresholds[0], thresholds[1]) if thresholds is not None else None
        self._embed_texts = embed_texts
        self._embed_query = embed_query
        self._model: Any = None
        self._tokenizer: Any = None
        self.cache_size = cache_size
        self._cache: OrderedDict[str, list[float]] = OrderedDict()
        self._queries: OrderedDict[str, list[float]] = OrderedDict()
        self._lock = threading.RLock()  # guards loading and the caches

    @property
    def thresholds(self) -> tuple[float, float]:
        """The thresholds given to this instance, else its unit's defaults (`UNIT_DEFAULTS`)."""
        return self._thresholds or self._unit_thresholds

    def warm_up(self) -> None:
        """Load the encoder and find its scale; a framework's model needs nothing here (its scale is found at
        first use, where a failing call is a runtime fault and takes the fallback)."""
        if self.model_name is not None:
            load_once(self)
            self.scale()

    def _load(self) -> None:
        _, transformers = require_torch()
        self.device = pick_device(self.device)
        self._tokenizer = transformers.AutoTokenizer.from_pretrained(self.model_name,
                                                                     local_files_only=self.local_files_only)
        model = transformers.AutoModel.from_pretrained(self.model_name, local_files_only=self.local_files_only)
        self._model = model.eval().to(self.device)

    def encode(self, texts: Sequence[str]) -> list[list[float]]:
        """L2-normalised embeddings, one per text, in input order. The last `cache_size` texts' embeddings
        are kept: a decision scores the passages' sentences, then strips made of the same sentences."""
        with self._lock:
            known = {text: self._cache[text] for text in texts if text in self._cache}
            for text in known:
                self._cache.move_to_end(text)
        missing = list(dict.fromkeys(text for text in texts if text not in known))
        if missing:
            fresh = dict(zip(missing, self._embed_all(missing)))
            with self._lock:
                self._cache.update(fresh)
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
            known.update(fresh)
        return [known[text] for text in texts]

    def clear_cache(self) -> None:
        """Forget the embeddings kept so far (benchmarks measure unseen texts)."""
        with self._lock:
            self._cache.clear()
            self._queries.clear()

    @contextmanager
    def query_embedding(self, query: str, vector: Sequence[float] | None) -> Iterator[None]:
        """Within the block, and for this request only, use `vector` as `query`'s embedding (one the
        retriever already computed with the same model), so the query is not embedded again. Only for
        `embed_query` evaluators, whose query side is the framework's model; a vector whose size differs from
        the passages' is ignored. The vector lives in the caller's context (threads and tasks started from
        it included), never in the evaluator's cache: another request with the same words is judged with
        its own embedding, not this one."""
        if self._embed_texts is None or not vector:
            yield
            return
        token = _REQUEST_VECTORS.set({**_REQUEST_VECTORS.get(), (id(self), query): _normalised(vector)})
        try:
            yield
        finally:
            _REQUEST_VECTORS.reset(token)

    def _remember(self, query: str, vector: list[float]) -> None:
        with self._lock:
            self._queries[query] = vector
            self._queries.move_to_end(query)
            while len(self._queries) > QUERY_CACHE_SIZE:
                self._queries.popitem(last=False)

    def _embed_all(self, texts: list[str]) -> list[list[float]]:
        texts = [encodable(t) for t in texts]
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths, little padding
        if self._embed_texts is not None:  # a framework's model batches in the order given
            placed: list[list[float]] = [[] for _ in texts]
            for i, vector in zip(order, self._embed_texts([texts[i] for i in order])):
                placed[i] = _normalised(vector)
            return placed
        load_once(self)  # the model alone: finding the scale embeds through here
        vectors: list[list[float]] = [[] for _ in texts]
        for start in range(0, len(order), self.batch_size):
            index = order[start:start + self.batch_size]
            for i, row in zip(index, self._embed_batch([texts[i] for i in index])):
                vectors[i] = row
        return vectors

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        torch, _ = require_torch()
        with torch.inference_mode():
            batch = self._tokenizer(texts, padding=True, truncation=True, max_length=self.max_length,
                                    return_tensors="pt").to(self.device)
            hidden = self._model(**batch).last_hidden_state
            return mean_pooled(hidden, batch["attention_mask"]).cpu().tolist()

    def _query_vector(self, query: str, *, skip_given: bool = False) -> list[float]:
        """The query's embedding, computed at most once per query while it stays among the last
        `QUERY_CACHE_SIZE` (a decision scores passages, then strips, with the same query)."""
        if self._embed_texts is None:
            return self.encode([query])[0]
        given = _REQUEST_VECTORS.get().get((id(self), query))
        if given is not None and not skip_given:
            return given
        with self._lock:
            known = self._queries.get(query)
        if known is None:
            asked = encodable(query)
            vector = self._embed_query(asked) if self._embed_query else self._embed_texts([asked])[0]
            known = _normalised(vector)
            self._remember(query, known)
        return known

    def scale(self) -> tuple[float, float]:
        """(midpoint, spread) in effect: those given, the rest found for this model at first use."""
        if self._scale is None:
            with self._lock:
                if self._scale is None:
                    key = (self._scale_key, self.unit) if self._scale_key else None
                    midpoint, spread = found_once(key, self._found_scale)
                    self._scale = (midpoint if self.midpoint is None else self.midpoint,
                                   spread if self.spread is None else self.spread)
        return self._scale

    def landmarks(self) -> Landmarks:
        """This model's landmarks on crag's reference set (`embedding_scale.measure`), its sentences (or
        passages) embedded in one call first."""
        passages = [pair["passage"] for pair in reference()["pairs"]]
        language = resolve(self.language, reference()["pairs"][0]["question"])
        units = passages if self.unit == "passage" else [p for group in _sentences(language, passages) for p in group]
        self.encode(list(dict.fromkeys(units)))
        return measure(self.cosines)

    def _found_scale(self) -> tuple[float, float]:
        midpoint, spread, _ = UNIT_DEFAULTS[self.unit]
        return carried(self.unit, midpoint, spread, self.landmarks())

    def cosines(self, query: str, texts: Sequence[str]) -> list[float]:
        """Each text's cosine with the query: its best (matched) sentence's, or its own (unit "passage")."""
        if not texts:
            return []
        if self.unit == "passage":
            return self._similarities(query, texts)
        language = resolve(self.language, query)
        pieces = _sentences(language, texts)
        if self.unit == "matched":
            question = QuestionWords(query, language)
            pieces = [sorted(group, key=question.score, reverse=True)[:MATCHED_SENTENCES] for group in pieces]
        distinct = list(dict.fromkeys(piece for group in pieces for piece in group))
        similarity = dict(zip(distinct, self._similarities(query, distinct)))
        return [max(similarity[piece] for piece in group) for group in pieces]

    def _similarities(self, query: str, texts: Sequence[str]) -> list[float]:
        """Each text's cosine with the query. A remembered query vector whose size differs from the texts'
        (another model's) is dropped and the query embedded here."""
        q = self._query_vector(query)
        vectors = self.encode(texts)
        if vectors and len(vectors[0]) != len(q):
            q = self._query_vector(query, skip_given=True)
        return [sum(x * y for x, y in zip(q, v)) for v in vectors]

    def evaluate(self, query: str, texts: Sequence[str]) -> Evaluation:
        """Cosine of the query with each text's best unit (sentence or passage), mapped to [-1, 1]."""
        if not texts:
            return Evaluation([])
        midpoint, spread = self.scale()
        return Evaluation([clip((c - midpoint) / spread) for c in self.cosines(query, texts)])


#: Query vectors a caller handed in for its own request: (evaluator id, query) -> unit vector.
_REQUEST_VECTORS: ContextVar[Mapping[tuple[int, str], list[float]]] = ContextVar(
    "crag_request_query_vectors", default=MappingProxyType({}))


def _sentences(language: str, texts: Sequence[str]) -> list[list[str]]:
    """Each text's sentences (the text itself where it has none)."""
    return [[text[a:b] for a, b in sentence_spans(language, text)] or [text] for text in texts]



def _normalised(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else [0.0 for _ in vector]
