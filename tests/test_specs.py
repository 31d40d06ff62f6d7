"""One spec table per family: every evaluator kind and web kind reads and writes, and the grammar shown to users
is the table's."""

import re
from pathlib import Path

import pytest

from crag_shared import (
    CombinedEvaluator,
    LexicalEvaluator,
    LLMEvaluator,
    ReplaySearch,
    evaluator_from_spec,
    evaluator_spec,
    save_combination,
)
from crag_shared.adapter import saved_evaluator
from crag_shared.demo import recorded_web_path
from crag_shared.evaluators import EVALUATOR_SPECS
from crag_shared.web.spec import WEB_SPECS, web_search_from_spec

MODEL_KINDS = ["t5", "cross-encoder", "onnx", "embedding", "embedding-sentence", "embedding-passage",
               "onnx-embedding", "onnx-embedding-sentence", "onnx-embedding-passage"]


def same(a, b):
    return type(a) is type(b) and all(getattr(a, k, None) == getattr(b, k, None)
                                      for k in ("model_name", "unit", "mode", "path", "weights", "bias"))


@pytest.mark.parametrize("kind", MODEL_KINDS)
def test_every_model_kind_round_trips(kind, tiny_bert, tiny_t5):
    path = str(tiny_t5 if kind == "t5" else tiny_bert)
    evaluator = evaluator_from_spec(f"{kind}:{path}")
    assert evaluator_spec(evaluator) == f"{kind}:{path}"
    assert same(evaluator_from_spec(evaluator_spec(evaluator)), evaluator)


def test_lexical_llm_judge_and_combination_round_trip(scripted_llm, tmp_path):
    assert evaluator_spec(evaluator_from_spec(evaluator_spec(LexicalEvaluator()))) == "lexical"
    llm = scripted_llm()
    for mode, spec in (("batched", "llm"), ("per_document", "llm:per_document")):
        judge = LLMEvaluator(llm, mode=mode)
        assert evaluator_spec(judge) == spec and same(evaluator_from_spec(evaluator_spec(judge), llm=llm), judge)
        assert saved_evaluator(judge) == (spec, None)  # what a saved adapter config records
    combination = CombinedEvaluator([LexicalEvaluator()], [2.0], -1.0, thresholds=(0.2, -0.6))
    with pytest.raises(NotImplementedError, match="save"):
        _ = evaluator_spec(combination)
    save_combination(combination, tmp_path / "c.json")
    loaded = evaluator_from_spec(evaluator_spec(combination))
    assert same(loaded, combination) and loaded.thresholds == (0.2, -0.6)
    shipped = evaluator_from_spec("combined:lexical-minilm")
    assert evaluator_spec(shipped) == "combined:lexical-minilm"


def test_what_no_spec_can_say_is_refused_loudly(scripted_llm):
    class Tuned(LexicalEvaluator):
        pass

    with pytest.raises(NotImplementedError, match="Tuned cannot be described"):
        _ = evaluator_spec(Tuned())
    recorded, _ = saved_evaluator(Tuned())
    assert recorded.startswith("custom:") and recorded.endswith("Tuned")
    with pytest.raises(ValueError, match="pass the instance itself"):
        evaluator_from_spec(recorded)
    with pytest.raises(ValueError, match="needs an LLM"):
        evaluator_from_spec("llm")
    with pytest.raises(ValueError, match=r"'batched' .* or 'per_document'"):
        evaluator_from_spec("llm:sometimes", llm=scripted_llm())
    with pytest.raises(ValueError, match="lexical takes no target"):
        evaluator_from_spec("lexical:x")
    with pytest.raises(ValueError, match=r"needs a target: t5:PATH_OR_ID"):
        evaluator_from_spec("t5")
    with pytest.raises(ValueError,
                       match=r"unknown evaluator spec 'bm25': use auto, default, lexical, reader\[:PATH\], t5:"):
        evaluator_from_spec("bm25")
    with pytest.raises(ValueError, match="no such file or directory"):
        evaluator_from_spec("cross-encoder:./no/such/model")


def test_web_specs_read_and_write_through_one_table(monkeypatch):
    assert web_search_from_spec("none") is None
    replay = web_search_from_spec(f"replay:{recorded_web_path()}")
    assert isinstance(replay, ReplaySearch) and WEB_SPECS.write(replay) == f"replay:{recorded_web_path()}"
    monkeypatch.delenv("SERPAPI_API_KEY", raising=False)
    with pytest.raises(ValueError, match="SERPAPI_API_KEY"):
        web_search_from_spec("serpapi")
    with pytest.raises(ValueError, match="use none, replay:PATH, serpapi, serper, searxng:URL, brave, tavily, exa, "
                                         "ddgs"):
        web_search_from_spec("bing")


@pytest.mark.parametrize("spec,env,cls", [("brave", "BRAVE_API_KEY", "BraveSearch"),
                                          ("tavily", "TAVILY_API_KEY", "TavilySearch"),
                                          ("exa", "EXA_API_KEY", "ExaSearch")])
def test_web_specs_build_each_provider_with_its_key_from_the_environment(monkeypatch, spec, env, cls):
    monkeypatch.delenv(env, raising=False)
    with pytest.raises(ValueError, match=env):
        web_search_from_spec(spec)
    monkeypatch.setenv(env, "k-from-env-0123")
    assert type(web_search_from_spec(spec)).__name__ == cls
    searxng = web_search_from_spec("searxng:http://searx.internal:8888/")
    assert type(searxng).__name__ == "SearXNGSearch" and searxng.base_url == "http://searx.internal:8888"
    with pytest.raises(ValueError, match="needs a target: searxng:URL"):
        web_search_from_spec("searxng")
    assert type(web_search_from_spec("ddgs")).__name__ == "DDGSSearch"  # no key


def test_the_docs_list_exactly_the_tables_grammar():
    guide = Path(__file__).resolve().parents[1] / "docs" / "guides" / "evaluators.md"
    paragraph = " ".join(guide.read_text(encoding="utf-8").split("The specs: ", 1)[1].split(". Without a path", 1)[0]
                         .split())
    assert re.findall(r"`([^`]+)`", paragraph) == EVALUATOR_SPECS.grammar()
