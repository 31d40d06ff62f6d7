"""A broken or overflowing model never makes a passage Correct: a score that is not a finite number is no
score (the shared clamp keeps it NaN), and the Corrector treats it as its evaluator's runtime fault: the
fallback evaluator scores, recorded in the trace and logged."""

import logging
import math

import pytest

from crag_shared import Action, Corrector, CrossEncoderEvaluator, EmbeddingEvaluator, OnnxCrossEncoderEvaluator
from crag_shared.evaluators.combined import CombinedEvaluator
from crag_shared.evaluators.lexical import LexicalEvaluator
from crag_shared.scores import clip

QUERY = "what is the capital of france"
OFF_TOPIC = "marie curie won the nobel prize twice"  # the lexical fallback judges it Incorrect


def test_the_clamp_never_turns_a_non_number_into_a_score():
    assert max(-1.0, min(1.0, math.nan)) == 1.0  # the trap: the best score
    assert all(math.isnan(clip(value)) for value in (math.nan, math.inf, -math.inf))
    assert [clip(2.0), clip(-3.0), clip(0.25), clip(70.0, -60.0, 60.0)] == [1.0, -1.0, 0.25, 60.0]


def overflowing(path, labels, score_map=None):
    """A real BERT cross-encoder whose logits overflow float32 on every input: the pooler saturates to +1 and
    each classifier weight is 1e38, so every logit is 32·1e38 = +inf (two labels: softmax of inf, inf is NaN)."""
    import torch
    import transformers

    from crag_shared.testing import build_bert_evaluator

    build_bert_evaluator(path, [QUERY, OFF_TOPIC], num_labels=labels)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(path)
    with torch.no_grad():
        model.bert.pooler.dense.weight.zero_()
        model.bert.pooler.dense.bias.fill_(10.0)
        model.classifier.weight.fill_(1e38)
        model.classifier.bias.zero_()
    if score_map:
        model.config.crag_score_map = score_map
    model.save_pretrained(path)
    return str(path)


@pytest.fixture(scope="module", params=[(1, None), (1, "clip"), (2, None)], ids=["sigmoid", "clip", "softmax"])
def broken_checkpoint(request, tmp_path_factory):
    labels, score_map = request.param
    return overflowing(tmp_path_factory.mktemp("overflow"), labels, score_map)


@pytest.fixture(params=["torch", "onnx"])
def broken_evaluator(request, broken_checkpoint, tmp_path):
    if request.param == "onnx":
        pytest.importorskip("onnxruntime")
        return OnnxCrossEncoderEvaluator(broken_checkpoint, quantize=False, export_dir=tmp_path / "onnx")
    return CrossEncoderEvaluator(broken_checkpoint)


def test_an_overflowing_cross_encoder_scores_nan_and_never_makes_a_passage_correct(broken_evaluator, caplog):
    broken_evaluator.warm_up()
    logits = broken_evaluator._batch_logits(broken_evaluator._encode(QUERY, [OFF_TOPIC]))
    assert not math.isfinite(float(logits[0][0]))  # the model really overflows
    assert math.isnan(broken_evaluator.score(QUERY, [OFF_TOPIC])[0])
    with caplog.at_level(logging.WARNING, logger="crag"):
        result = Corrector(broken_evaluator).correct(QUERY, [OFF_TOPIC])
    assert result.action is not Action.CORRECT
    assert "not finite" in result.fallbacks[0].reason and result.fallbacks[0].applied.startswith("scored with lexical")
    assert any("not finite" in record.getMessage() for record in caplog.records)
    with pytest.raises(ValueError, match="not finite"):
        Corrector(broken_evaluator, fallback_evaluator=None).correct(QUERY, [OFF_TOPIC])


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_an_embedding_model_returning_non_numbers_never_makes_a_passage_correct(bad):
    evaluator = EmbeddingEvaluator(embed_texts=lambda texts: [[bad, 1.0] for _ in texts], midpoint=0.55, spread=0.25)
    assert math.isnan(evaluator.score(QUERY, [OFF_TOPIC])[0])
    result = Corrector(evaluator).correct(QUERY, [OFF_TOPIC])
    assert result.action is not Action.CORRECT and "not finite" in result.fallbacks[0].reason
    finding = EmbeddingEvaluator(embed_texts=lambda texts: [[bad, 1.0] for _ in texts])  # its scale unfound
    result = Corrector(finding).correct(QUERY, [OFF_TOPIC])
    assert result.action is not Action.CORRECT and "not finite" in result.fallbacks[0].reason


def test_a_combination_over_a_broken_member_has_no_score():
    broken = EmbeddingEvaluator(embed_texts=lambda texts: [[math.nan, 1.0] for _ in texts], midpoint=0.5, spread=0.2)
    combined = CombinedEvaluator([LexicalEvaluator(), broken], weights=[1.0, 1.0], bias=0.0)
    assert math.isnan(combined.score(QUERY, [OFF_TOPIC])[0])
    assert Corrector(combined).correct(QUERY, [OFF_TOPIC]).action is not Action.CORRECT
