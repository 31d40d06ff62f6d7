"""Test support for apps built on crag, offline: small real evaluator checkpoints, a loopback web, and a
pytest plugin (`crag_fake_web`). Tooling, never imported by the runtime."""

from .fakes import (
    SEARCH_FAULTS,
    FakePage,
    FakeWeb,
    build_bert_evaluator,
    build_t5_evaluator,
    build_tokenizer,
    hashing_vector,
    keyword_reply,
)
from .judging import judge_reply

__all__ = ["SEARCH_FAULTS", "FakePage", "FakeWeb", "build_bert_evaluator", "build_t5_evaluator", "build_tokenizer",
           "hashing_vector", "judge_reply", "keyword_reply"]
