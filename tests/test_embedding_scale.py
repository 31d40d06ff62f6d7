"""The embedding judge's mapping fits the model that embeds: found at first use on crag's reference set, with
no labels, so thresholds mean the same on a model whose cosines sit elsewhere than MiniLM's."""

import math
import random

import pytest

from crag_shared import Action, Corrector, EmbeddingEvaluator, EvaluatorConfigurationError
from crag_shared.evaluators.embedding import UNIT_DEFAULTS
from crag_shared.evaluators.embedding_scale import Landmarks, carried, reference
from crag_shared.testing import hashing_vector

QUESTION = "What is the boiling point of the coolant in the pump?"
ANSWER = "The boiling point of the coolant in the pump is 130 degrees."
UNRELATED = "Tickets for the harbour ferry can be bought at the kiosk next to the pier."


def words(texts):
    """A small model that does tell answers from unrelated text: bag-of-words vectors (feature hashing)."""
    return [hashing_vector(text, 512) for text in texts]


def raised(lift):
    """The same model on another scale: each vector gains a component that no text shares with another's
    words, the same for every text, so every cosine c becomes (c + lift) / (1 + lift), exactly."""
    return lambda texts: [[*vector, math.sqrt(lift)] for vector in words(texts)]


def judge(embed, **options):
    return EmbeddingEvaluator(embed_texts=embed, embed_query=lambda query: embed([query])[0], **options)


@pytest.mark.parametrize("unit", list(UNIT_DEFAULTS))
def test_a_model_whose_cosines_sit_higher_judges_as_the_original_does(unit):
    base, high = judge(words, unit=unit), judge(raised(3.0), unit=unit)
    texts = [ANSWER, UNRELATED]
    assert high.cosines(QUESTION, [UNRELATED])[0] > 0.74  # an unrelated passage near MiniLM's upper threshold
    fixed = judge(raised(3.0), unit=unit, **dict(zip(("midpoint", "spread"), UNIT_DEFAULTS[unit][:2])))
    assert fixed.score(QUESTION, [UNRELATED])[0] >= fixed.thresholds[0]  # MiniLM's mapping: unrelated is Correct
    assert high.scale() != base.scale()
    assert high.score(QUESTION, texts) == pytest.approx(base.score(QUESTION, texts), abs=1e-9)
    assert high.score(QUESTION, [UNRELATED])[0] < high.thresholds[1]  # its own scale: unrelated is Incorrect


def test_a_model_whose_cosines_sit_lower_keeps_the_answer_the_fixed_mapping_drops():
    low = raised(0.0)  # words() itself: an answer's cosine about 0.4, far below MiniLM's 0.7

    def private(text):  # a unit vector drawn from the text itself: nearly orthogonal to any other text's
        rng = random.Random(text)
        values = [rng.gauss(0.0, 1.0) for _ in range(512)]
        norm = math.sqrt(sum(x * x for x in values))
        return [x / norm for x in values]

    def squeezed(texts):  # every cosine about halved: each vector gains a private part as long as itself
        return [[*(v / math.sqrt(2) for v in vector), *(x / math.sqrt(2) for x in private(t))]
                for vector, t in zip(low(texts), texts)]

    fixed = Corrector(judge(squeezed, midpoint=0.55, spread=0.25)).correct(QUESTION, [ANSWER])
    found = Corrector(judge(squeezed)).correct(QUESTION, [ANSWER])
    assert fixed.action is not Action.CORRECT  # MiniLM's mapping returns nothing for an answerable question
    assert found.action is Action.CORRECT and ANSWER in found.knowledge_text


def test_minilm_gets_its_own_defaults_back_and_any_model_the_same_relative_place():
    for unit, (midpoint, spread, _) in UNIT_DEFAULTS.items():
        minilm = Landmarks(*reference()["landmarks"][unit])
        assert carried(unit, midpoint, spread, minilm) == pytest.approx((midpoint, spread))
        other = Landmarks(0.9, 0.7)
        found_midpoint, found_spread = carried(unit, midpoint, spread, other)
        place = (found_midpoint - other.unrelated) / (other.matched - other.unrelated)
        assert place == pytest.approx((midpoint - minilm.unrelated) / (minilm.matched - minilm.unrelated))
        assert found_spread / (other.matched - other.unrelated) == pytest.approx(
            spread / (minilm.matched - minilm.unrelated))


def test_a_framework_model_is_asked_once_per_process_and_given_values_skip_it():
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    from crag_llamaindex import CRAGPostprocessor, embedding_evaluator
    from crag_llamaindex.testing import HashingEmbedding

    class Counting(HashingEmbedding):
        embed_batch_size: int = 1000  # crag's one call, in one batch here
        queries: int = 0
        batches: int = 0

        def _get_query_embedding(self, query):
            self.queries += 1
            return super()._get_query_embedding(query)

        def _get_text_embeddings(self, texts):
            self.batches += 1
            return [self._vector(t) for t in texts]

    questions = len(reference()["pairs"])
    model = Counting(model_name="hashing-scale-test")
    first = CRAGPostprocessor(evaluator=model)
    first.correct([NodeWithScore(node=TextNode(text=ANSWER))], QueryBundle(QUESTION))
    assert model.queries == questions + 1 and model.batches == 2  # the reference once, then the query's own
    second = CRAGPostprocessor(evaluator=model)  # the same model, named: its scale is known in this process
    second.correct([NodeWithScore(node=TextNode(text=UNRELATED))], QueryBundle(QUESTION))
    assert model.queries == questions + 2
    unnamed = Counting()  # a model that does not name itself is measured for each judge
    CRAGPostprocessor(evaluator=unnamed).correct([NodeWithScore(node=TextNode(text=ANSWER))], QueryBundle(QUESTION))
    assert unnamed.queries == questions + 1
    given = Counting()
    evaluator = embedding_evaluator(given, midpoint=0.3, spread=0.2)
    assert evaluator.score(QUESTION, [ANSWER]) and given.queries == 1 and evaluator.scale() == (0.3, 0.2)


def test_haystack_embedders_get_their_own_scale():
    from haystack import Document

    from crag_haystack import CRAG
    from crag_haystack.testing import HashingDocumentEmbedder, HashingTextEmbedder

    crag = CRAG(evaluator="embedding", text_embedder=HashingTextEmbedder(), document_embedder=HashingDocumentEmbedder())
    crag.warm_up()
    assert crag.run(query=QUESTION, documents=[Document(content=ANSWER)])["action"] == "correct"
    same = judge(lambda texts: [hashing_vector(text, 256) for text in texts])
    assert crag.corrector.evaluator.scale() == pytest.approx(same.scale())


def test_a_model_that_cannot_tell_answers_from_unrelated_text_is_a_configuration_error():
    constant = judge(lambda texts: [[1.0, 0.5] for _ in texts])
    with pytest.raises(EvaluatorConfigurationError, match="does not tell answers from unrelated text"):
        Corrector(constant).correct(QUESTION, [ANSWER])  # never hidden behind the fallback judge


def test_a_failing_model_is_measured_again_at_the_next_use():
    calls = []

    def flaky(texts):
        calls.append(len(texts))
        if len(calls) == 1:
            raise ConnectionError("embedding service unreachable")
        return words(texts)

    evaluator = judge(flaky)
    result = Corrector(evaluator).correct(QUESTION, [ANSWER])
    assert "unreachable" in result.fallbacks[0].reason and result.fallbacks[0].applied.startswith("scored with")
    assert Corrector(evaluator).correct(QUESTION, [ANSWER]).action is Action.CORRECT and len(calls) > 2
