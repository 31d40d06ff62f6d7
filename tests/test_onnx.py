"""The ONNX Runtime backend: same scores as torch, int8 close, self-contained exports, CLI and specs."""

import json
import subprocess
import sys

import pytest

from crag_shared import (
    ActionPolicy,
    Corrector,
    CrossEncoderEvaluator,
    EvaluatorConfigurationError,
    OnnxCrossEncoderEvaluator,
    evaluator_from_spec,
    evaluator_spec,
)
from crag_shared.evaluators.onnx_export import MANIFEST, SESSION_DISABLED_OPTIMIZERS, default_export_dir, export_onnx
from crag_shared.tools.cli import main

pytest.importorskip("onnxruntime")

QUERY = "what is the capital of france"
TEXTS = ["paris is the capital of france", "the eiffel tower", "marie curie won the nobel prize twice " * 9,
         "x", "henry feilden was a politician in england"]


@pytest.fixture(scope="module")
def pair_bert(tiny_bert, tmp_path_factory):
    """tiny_bert with crag's pair pooling, as `crag train-evaluator` writes it."""
    import transformers

    target = tmp_path_factory.mktemp("pair")
    model = transformers.AutoModelForSequenceClassification.from_pretrained(tiny_bert)
    model.config.crag_pooling, model.config.crag_score_map = "pair", "clip"
    model.save_pretrained(target)
    transformers.AutoTokenizer.from_pretrained(tiny_bert).save_pretrained(target)
    return target


@pytest.mark.parametrize("checkpoint", ["tiny_bert", "pair_bert"])
def test_float_export_scores_like_torch_and_int8_stays_close(checkpoint, request, tmp_path):
    model = request.getfixturevalue(checkpoint)
    torch_scores = CrossEncoderEvaluator(str(model)).score(QUERY, TEXTS)
    fp32 = OnnxCrossEncoderEvaluator(str(model), quantize=False, export_dir=tmp_path / "fp32")
    int8 = OnnxCrossEncoderEvaluator(str(model), export_dir=tmp_path / "int8")
    assert fp32.score(QUERY, TEXTS) == pytest.approx(torch_scores, abs=1e-4)
    assert int8.score(QUERY, TEXTS) == pytest.approx(torch_scores, abs=0.05)
    assert fp32.score_map == CrossEncoderEvaluator(str(model)).score_map
    assert (tmp_path / "int8" / "model_int8.onnx").exists() and not (tmp_path / "int8" / "model.onnx").exists()


def _op_types(path):
    import onnx

    return {node.op_type for node in onnx.load(str(path)).graph.node}


@pytest.mark.parametrize("quantize", [False, True])
def test_export_fuses_attention_but_not_the_slow_skip_layer_norm_and_bias_gelu(tiny_bert, tmp_path, quantize):
    """The exported graph keeps Add + LayerNormalization and Add + Gelu, and the session options stop ONNX
    Runtime from fusing them again at load time (without the options it does)."""
    import onnxruntime as ort

    directory = export_onnx(str(tiny_bert), tmp_path / "export", quantize=quantize)
    model = directory / json.loads((directory / MANIFEST).read_text())["file"]
    exported = _op_types(model)
    assert {"QAttention" if quantize else "Attention", "LayerNormalization", "Gelu"} <= exported
    assert not exported & {"SkipLayerNormalization", "BiasGelu"}

    def loaded_op_types(**kwargs):
        options = ort.SessionOptions()
        options.optimized_model_filepath = str(tmp_path / "loaded.onnx")
        ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"], **kwargs)
        return _op_types(tmp_path / "loaded.onnx")

    assert not loaded_op_types(disabled_optimizers=SESSION_DISABLED_OPTIMIZERS) & {"SkipLayerNormalization", "BiasGelu"}
    assert "SkipLayerNormalization" in loaded_op_types()


def test_int8_export_quantizes_only_encoder_products_and_to_seven_bits(tiny_bert, tmp_path):
    """7-bit weights keep AVX2 CPUs without VNNI from saturating their u8 x s8 sums; the embeddings and the
    first layer norm stay float."""
    import onnx
    from onnx import numpy_helper

    directory = export_onnx(str(tiny_bert), tmp_path / "export", quantize=True)
    graph = onnx.load(str(directory / "model_int8.onnx")).graph
    kinds = {node.op_type for node in graph.node}
    assert {"MatMulInteger", "QAttention", "EmbedLayerNormalization"} <= kinds
    assert "QEmbedLayerNormalization" not in kinds
    weights = [numpy_helper.to_array(t) for t in graph.initializer if t.data_type == onnx.TensorProto.INT8]
    assert weights and all(abs(int(w.min())) <= 64 and int(w.max()) <= 64 for w in weights)  # 8 bits: ±127


def test_truncation_matches_the_torch_tokenizer(tiny_bert, tmp_path):
    texts = [t * 3 for t in TEXTS]
    expected = CrossEncoderEvaluator(str(tiny_bert), max_length=16).score(QUERY * 2, texts)
    onnx = OnnxCrossEncoderEvaluator(str(tiny_bert), quantize=False, max_length=16, export_dir=tmp_path)
    assert onnx.score(QUERY * 2, texts) == pytest.approx(expected, abs=1e-4)


def test_batching_does_not_change_onnx_scores(tiny_bert, tmp_path):
    single = OnnxCrossEncoderEvaluator(str(tiny_bert), quantize=False, export_dir=tmp_path)
    expected = single.score(QUERY, TEXTS)  # exports into tmp_path
    batched = OnnxCrossEncoderEvaluator(str(tmp_path), quantize=False, batch_size=4, max_batch_tokens=10_000)
    assert batched.score(QUERY, TEXTS) == pytest.approx(expected, abs=1e-5)


def test_export_directory_loads_without_torch_or_transformers_and_through_specs(tiny_bert, tmp_path, capsys):
    assert main(["export-onnx", str(tiny_bert), str(tmp_path / "exported")]) == 0
    assert "onnx:" in capsys.readouterr().out
    manifest = json.loads((tmp_path / "exported" / MANIFEST).read_text())
    assert manifest["quantized"] and manifest["file"] == "model_int8.onnx"
    expected = OnnxCrossEncoderEvaluator(str(tmp_path / "exported")).score(QUERY, TEXTS)
    code = ("import sys, json; from crag_shared import evaluator_from_spec; "
            f"ev = evaluator_from_spec('onnx:{tmp_path / 'exported'}'); s = ev.score({QUERY!r}, {TEXTS!r}); "
            "print(json.dumps({'torch': any(m in sys.modules for m in ('torch', 'transformers')), 'scores': s}))")
    shown = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                      check=True).stdout.strip().splitlines()[-1])
    assert shown == {"torch": False, "scores": pytest.approx(expected, abs=1e-6)}
    assert evaluator_spec(evaluator_from_spec(f"onnx:{tmp_path / 'exported'}")) == f"onnx:{tmp_path / 'exported'}"
    with pytest.raises(ValueError, match="quantized export; pass quantize=True"):
        OnnxCrossEncoderEvaluator(str(tmp_path / "exported"), quantize=False).warm_up()


def test_cache_entry_follows_the_checkpoint_files(tiny_bert, tmp_path, monkeypatch):
    import shutil

    monkeypatch.setenv("CRAG_CACHE", str(tmp_path / "cache"))

    copy = shutil.copytree(tiny_bert, tmp_path / "model")
    before = default_export_dir(str(copy), True)
    assert before == default_export_dir(str(copy), True) and before.name.startswith("model-")
    assert default_export_dir(str(copy), False) != before  # float and int8 never replace each other
    (copy / "config.json").write_text((copy / "config.json").read_text() + "\n")
    assert default_export_dir(str(copy), True) != before  # retrained weights or config: a fresh export
    OnnxCrossEncoderEvaluator(str(copy)).score(QUERY, TEXTS)  # no export_dir: exports into the cache
    assert (default_export_dir(str(copy), True) / "model_int8.onnx").exists()
    assert default_export_dir(str(copy), True).parent == tmp_path / "cache" / "onnx"


def test_onnx_evaluator_rejects_gpu_options_and_drives_the_corrector(tiny_bert, tmp_path):
    with pytest.raises(ValueError, match="runs on the CPU"):
        OnnxCrossEncoderEvaluator(str(tiny_bert), device="cuda")
    evaluator = OnnxCrossEncoderEvaluator(str(tiny_bert), quantize=False, export_dir=tmp_path)
    corrector = Corrector(evaluator=evaluator, policy=ActionPolicy(-1.0, -1.0))
    reference = Corrector(evaluator=CrossEncoderEvaluator(str(tiny_bert)), policy=ActionPolicy(-1.0, -1.0))
    ours, theirs = corrector.correct(QUERY, TEXTS), reference.correct(QUERY, TEXTS)
    assert ours.action == theirs.action
    assert [s.text for s in ours.knowledge] == [s.text for s in theirs.knowledge]


def test_failed_export_leaves_no_directory(tmp_path):
    with pytest.raises(EvaluatorConfigurationError):
        OnnxCrossEncoderEvaluator(str(tmp_path / "missing"), export_dir=tmp_path / "out").warm_up()
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".export-*"))


def test_the_onnx_cross_encoder_shares_batching_and_score_map_but_no_torch_machinery():
    from crag_shared.evaluators.batching import BatchedPairEvaluator
    from crag_shared.evaluators.hf import HFSequenceEvaluator
    from crag_shared.evaluators.score_map import LogitScoreMap

    assert issubclass(OnnxCrossEncoderEvaluator, BatchedPairEvaluator)
    assert issubclass(OnnxCrossEncoderEvaluator, LogitScoreMap)
    assert not issubclass(OnnxCrossEncoderEvaluator, HFSequenceEvaluator)
    with pytest.raises(ValueError, match="runs on the CPU"):
        OnnxCrossEncoderEvaluator("x", device="cuda")
    with pytest.raises(ValueError, match="score_map"):
        OnnxCrossEncoderEvaluator("x", score_map="tanh")  # type: ignore[arg-type]
