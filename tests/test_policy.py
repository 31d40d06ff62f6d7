import json

import pytest

from crag_shared import Action, ActionPolicy, LexicalEvaluator, T5Evaluator


def test_paper_rule_with_scores_equal_to_thresholds():
    policy = ActionPolicy(upper=0.59, lower=-0.99)
    assert policy.decide([0.59]) is Action.CORRECT  # equal to upper counts as Correct
    assert policy.decide([-0.99]) is Action.AMBIGUOUS  # equal to lower is not "below"
    assert policy.decide([-0.991, -1.0]) is Action.INCORRECT
    assert policy.decide([0.5889, -1.0]) is Action.AMBIGUOUS
    assert policy.decide([-1.0, 0.6, -1.0]) is Action.CORRECT  # any one passage suffices


def test_no_scores_is_incorrect():
    assert ActionPolicy(0.5, -0.5).decide([]) is Action.INCORRECT


def test_equal_thresholds_remove_ambiguous():
    policy = ActionPolicy(0.0, 0.0)
    assert policy.decide([0.0]) is Action.CORRECT
    assert policy.decide([-0.0001]) is Action.INCORRECT


def test_signed_thresholds_are_used_as_given():
    # the official script negates a positive lower threshold; we do not
    policy = ActionPolicy(0.95, 0.9)
    assert policy.decide([0.92]) is Action.AMBIGUOUS
    assert policy.decide([-0.5]) is Action.INCORRECT


@pytest.mark.parametrize("upper,lower,message", [
    (0.2, 0.5, "must not be below"),
    (1.5, 0.0, r"\[-1, 1\]"),
    (0.0, -1.01, r"\[-1, 1\]"),
    (float("nan"), 0.0, "must be a number"),
])
def test_bad_thresholds_raise(upper, lower, message):
    with pytest.raises(ValueError, match=message):
        ActionPolicy(upper, lower)


def test_json_round_trip(tmp_path):
    path = tmp_path / "t.json"
    ActionPolicy(0.4, -0.7).save(path)
    assert json.loads(path.read_text()) == {"upper": 0.4, "lower": -0.7}
    assert ActionPolicy.load(path) == ActionPolicy(0.4, -0.7)
    with pytest.raises(ValueError, match="lower: Field required"):
        ActionPolicy.from_dict({"upper": 0.1})


def test_each_evaluator_carries_its_thresholds():
    assert ActionPolicy.for_evaluator(T5Evaluator("unused")) == ActionPolicy(0.59, -0.99)
    assert ActionPolicy.for_evaluator(LexicalEvaluator()) == ActionPolicy(*LexicalEvaluator.default_thresholds)
