"""Shared fixtures: tiny real models built offline, a scripted LLM, and quiet frameworks."""

from __future__ import annotations

import json
import os

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# the suite's behaviour tests are written for the lexical judge; tests of the default judge itself
# (tests/test_reader.py) clear this
os.environ.setdefault("CRAG_DEFAULT_EVALUATOR", "lexical")

from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "shared" / "bench"

try:  # the tests' stand-in generators and retrievers are trusted here, as an app trusts its own modules
    from haystack.core.serialization import allow_deserialization_module
except ImportError:  # Haystack 2.x has no allowlist (or Haystack is not installed)
    pass
else:
    allow_deserialization_module("crag_haystack.testing")

VOCAB_TEXTS = [
    "what is the capital of france paris is the capital and largest city of france",
    "the eiffel tower stands in paris it was built in 1889 by gustave eiffel",
    "henry feilden was an english conservative party politician who sat for blackburn",
    "what is henry feilden occupation politician engineer architect poet",
    "marie curie was a physicist and chemist who won the nobel prize twice",
]


class ScriptedLLM:
    """A deterministic LLM for the core protocol: replies from a list or a function, records prompts."""

    def __init__(self, replies=None, fn=None, fail: Exception | None = None):
        self.replies = list(replies or [])
        self.fn = fn
        self.fail = fail
        self.prompts: list[str] = []

    def complete(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if self.fail:
            raise self.fail
        if self.fn:
            return self.fn(prompt)
        return self.replies.pop(0)

    async def acomplete(self, prompt: str) -> str:
        return self.complete(prompt)


@pytest.fixture
def scripted_llm():
    return ScriptedLLM


@pytest.fixture(scope="session")
def tiny_t5(tmp_path_factory) -> Path:
    from crag_shared.testing import build_t5_evaluator

    return build_t5_evaluator(tmp_path_factory.mktemp("t5"), VOCAB_TEXTS)


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    from crag_shared.testing import build_bert_evaluator

    return build_bert_evaluator(tmp_path_factory.mktemp("bert"), VOCAB_TEXTS)


@pytest.fixture
def bench_dir() -> Path:
    if not BENCH.is_dir():
        pytest.skip("../shared/bench is not beside this checkout")
    return BENCH


LOOPBACK = ["127.0.0.1/32"]  # the fake web's address; every other private address stays refused


@pytest.fixture
def fake_web(crag_fake_web):
    """The plugin's loopback web with two pages about Henry Feilden and Blackburn."""
    crag_fake_web.add("feilden", "Henry Feilden (Conservative politician)", [
        "Henry Master Feilden was an English Conservative Party politician who sat for Blackburn.",
        "Henry Feilden was elected at the Blackburn by-election of 1869 after a petition.",
        "Short.",
    ])
    crag_fake_web.add("blackburn", "Blackburn", ["Blackburn is a town in Lancashire, England, on the River Darwen."])
    return crag_fake_web


@pytest.fixture
def serpapi_search(fake_web):
    from crag_shared.web.fetch import PageFetcher
    from crag_shared.web.serpapi import SerpAPISearch

    def make(**kwargs):
        fetcher = kwargs.pop("fetcher", None) or PageFetcher(allow_private_addresses=LOOPBACK, timeout=2,
                                                             deadline=3, backoff=0.05)
        return SerpAPISearch(api_key=kwargs.pop("api_key", "test-key"), base_url=fake_web.url, timeout=1.5,
                             fetcher=fetcher, **kwargs)

    return make


#: The demo questions with their answers, and a near miss: a passage that holds the answer without naming
#: the bridge, which the lexical judge turns away ("does not name 'Golden Gate Bridge' in full").
NEAR_MISS = "The bridge opened to traffic in May 1937 after four years of work."


@pytest.fixture
def answered_run(tmp_path) -> Path:
    """A `crag run` output (no web search) of questions whose data rows carry their answers."""
    from crag_shared.demo import QUESTIONS, corpus, retrieve
    from crag_shared.tools.cli import main

    def row(identifier, question, answers, passages):
        return {"id": identifier, "question": question, "answers": answers,
                "ctxs": [{"text": p.text, "title": p.title} if hasattr(p, "text") else {"text": p} for p in passages]}

    others = [p for p in corpus() if p.title in ("Sydney Opera House", "Marie Curie")]
    rows = [row("bridge", QUESTIONS[0], ["1937"], retrieve(QUESTIONS[0], corpus())),
            row("mongolia", QUESTIONS[2], ["Ulaanbaatar"], retrieve(QUESTIONS[2], corpus())),
            row("near-miss", QUESTIONS[0], ["1937"], [*others, NEAR_MISS])]
    data = tmp_path / "answered.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "answered-out.jsonl"
    assert main(["run", "--data", str(data), "--out", str(out)]) == 0
    return out
