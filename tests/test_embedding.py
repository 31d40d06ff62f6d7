"""EmbeddingEvaluator on a tiny encoder built here, and reusing the frameworks' own embedding models."""

import pytest

from crag_shared import Corrector, EmbeddingEvaluator, evaluator_from_spec, evaluator_spec
from crag_shared.evaluators import embedding_unit

QUERY = "what is henry feilden occupation"
MINILM = {"midpoint": 0.55, "spread": 0.25}  # a random tiny encoder has no scale of its own to find
TEXTS = ["henry feilden was an english conservative party politician who sat for blackburn",
         "the eiffel tower stands in paris it was built in 1889 by gustave eiffel",
         "marie curie was a physicist and chemist who won the nobel prize twice", "paris"]


def test_scores_are_batch_independent_and_in_range(tiny_bert):
    evaluator = EmbeddingEvaluator(str(tiny_bert), batch_size=3, **MINILM)
    together = evaluator.score(QUERY, TEXTS)
    alone = [evaluator.score(QUERY, [text])[0] for text in TEXTS]
    assert together == pytest.approx(alone, abs=1e-5)
    assert all(-1.0 <= s <= 1.0 for s in together)
    cosines = evaluator.cosines(QUERY, TEXTS)
    assert (evaluator.scale(), evaluator.thresholds) == ((0.55, 0.25), (0.61, 0.3))
    assert together == pytest.approx([max(-1, min(1, (c - 0.55) / 0.25)) for c in cosines])


def test_sentence_unit_scores_a_passage_by_its_best_sentence(tiny_bert):
    by_sentence = EmbeddingEvaluator(str(tiny_bert), unit="sentence")
    by_passage = EmbeddingEvaluator(str(tiny_bert), unit="passage")
    assert by_passage.thresholds == (0.3, -0.3) and evaluator_spec(by_passage) == f"embedding-passage:{tiny_bert}"
    sentences = ["Henry Feilden was an English politician.", "The Eiffel Tower stands in Paris.",
                 "It rained all day."]
    passage = " ".join(sentences)
    best = max(by_passage.cosines(QUERY, sentences))
    expected = [best, *by_passage.cosines(QUERY, ["paris"])]
    assert by_sentence.cosines(QUERY, [passage, "paris"]) == pytest.approx(expected, abs=1e-6)
    assert by_passage.cosines(QUERY, [passage])[0] != pytest.approx(best, abs=1e-4)  # the mean is not the best
    with pytest.raises(ValueError, match="unit"):
        EmbeddingEvaluator(str(tiny_bert), unit="word")


def test_each_unit_has_its_spec(tiny_bert):
    for unit, kind in (("matched", "embedding"), ("sentence", "embedding-sentence"), ("passage", "embedding-passage")):
        evaluator = EmbeddingEvaluator(str(tiny_bert), unit=unit)
        assert evaluator_spec(evaluator) == f"{kind}:{tiny_bert}"
        assert evaluator_from_spec(evaluator_spec(evaluator)).unit == unit
        assert evaluator_from_spec(f"onnx-{kind}:{tiny_bert}").unit == unit
        assert embedding_unit(kind) == unit and embedding_unit(f"onnx-{kind}") is None
    assert EmbeddingEvaluator(str(tiny_bert)).unit == "matched"


def test_matched_unit_embeds_only_the_sentences_that_match_the_question():
    embedded: list[str] = []

    def letters(texts: list[str]) -> list[list[float]]:  # a deterministic toy embedding: letter counts
        embedded.extend(texts)
        return [[text.lower().count(c) + 0.5 for c in "abcdefghijklmnopqrstuvwxyz"] for text in texts]

    query = "what was henry feilden's seat in parliament"
    sentences = ["It rained all day.", "Henry Feilden was an English politician.",
                 "He sat for Blackburn in parliament.", "The Eiffel Tower stands in Paris."]
    matched = EmbeddingEvaluator(embed_texts=letters)
    cosine = matched.cosines(query, [" ".join(sentences)])[0]
    assert sorted(t for t in embedded if t != query) == sorted(sentences[1:3])  # the two that share its words
    every = EmbeddingEvaluator(embed_texts=letters, unit="sentence").cosines(query, sentences)
    assert cosine == pytest.approx(max(every[1:3]))
    assert cosine != pytest.approx(max(every))  # a sentence with none of its words is not a candidate


def test_spec_round_trip_and_clear_errors(tiny_bert, tmp_path):
    evaluator = evaluator_from_spec(f"embedding:{tiny_bert}")
    spec = evaluator_spec(evaluator)
    assert isinstance(evaluator, EmbeddingEvaluator) and evaluator_spec(evaluator_from_spec(spec)) == spec
    with pytest.raises(ValueError, match="no such file"):
        evaluator_from_spec(f"embedding:{tmp_path / 'typo'}")
    with pytest.raises(ValueError, match="framework's embedding model"):
        evaluator_from_spec("embedding")
    with pytest.raises(ValueError, match="either model"):
        EmbeddingEvaluator()


def test_a_corrector_runs_on_it(tiny_bert):
    result = Corrector(EmbeddingEvaluator(str(tiny_bert), thresholds=(-1.0, -1.0), **MINILM)).correct(QUERY, TEXTS[:2])
    assert result.action.value == "correct" and result.knowledge


def test_llamaindex_reuses_the_apps_embedding_model():
    from llama_index.core import Settings
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    from crag_llamaindex import CRAGPostprocessor, embedding_evaluator
    from crag_llamaindex.testing import HashingEmbedding

    class Counting(HashingEmbedding):
        def _get_text_embeddings(self, texts):
            Counting.batches = getattr(Counting, "batches", 0) + 1
            return [self._vector(t) for t in texts]

    previous = Settings._embed_model
    Settings.embed_model = Counting()
    try:
        crag = CRAGPostprocessor(evaluator="embedding")
        assert isinstance(crag.corrector.evaluator, EmbeddingEvaluator)
        nodes = [NodeWithScore(node=TextNode(text=t)) for t in TEXTS]
        _, result = crag.correct(nodes, QueryBundle(QUERY))
        assert Counting.batches >= 1 and result.scores[0] == max(result.scores)
        rebuilt = CRAGPostprocessor.from_dict(crag.to_dict())
        assert rebuilt.config.evaluator == "embedding" and isinstance(rebuilt.corrector.evaluator, EmbeddingEvaluator)
        direct = embedding_evaluator(Counting()).score(QUERY, TEXTS)
        assert direct == pytest.approx(result.scores)
        passage = CRAGPostprocessor(evaluator="embedding-passage")
        assert passage.corrector.evaluator.unit == "passage"
        assert CRAGPostprocessor.from_dict(passage.to_dict()).corrector.evaluator.unit == "passage"
    finally:
        Settings._embed_model = previous
    with pytest.raises(TypeError, match="BaseEmbedding"):
        embedding_evaluator("not a model")


def test_haystack_reuses_the_pipelines_embedders():
    from haystack import Document, Pipeline

    from crag_haystack import CRAG, RetrievalRouter, embedding_evaluator
    from crag_haystack.testing import HashingDocumentEmbedder, HashingTextEmbedder

    documents = [Document(content=t) for t in TEXTS]
    embedder = HashingDocumentEmbedder()
    crag = CRAG(evaluator="embedding", text_embedder=HashingTextEmbedder(), document_embedder=embedder)
    crag.warm_up()
    out = crag.run(query=QUERY, documents=documents)
    assert embedder.calls >= 1 and out["scores"][0] == max(out["scores"])
    assert out["scores"] == pytest.approx(embedding_evaluator(HashingTextEmbedder()).score(QUERY, TEXTS))
    pipeline = Pipeline()
    pipeline.add_component("crag", CRAG(evaluator="embedding", text_embedder=HashingTextEmbedder(),
                                        document_embedder=HashingDocumentEmbedder()))
    loaded = Pipeline.loads(pipeline.dumps())
    assert isinstance(loaded.get_component("crag").text_embedder, HashingTextEmbedder)
    with pytest.raises(ValueError, match="text_embedder"):
        RetrievalRouter(evaluator="embedding")
    router = RetrievalRouter(evaluator="embedding-passage", text_embedder=HashingTextEmbedder())
    router.warm_up()
    routed = router.run(query=QUERY, documents=documents)
    assert routed["scores"] == pytest.approx(embedding_evaluator(HashingTextEmbedder(), unit="passage").score(
        QUERY, TEXTS))


@pytest.mark.slow
def test_onnx_backend_matches_torch_and_loads_its_own_export(tiny_bert, tmp_path):
    from crag_shared import OnnxEmbeddingEvaluator
    from crag_shared.tools.cli import main

    torch_scores = EmbeddingEvaluator(str(tiny_bert), **MINILM).score(QUERY, TEXTS)
    fp32 = OnnxEmbeddingEvaluator(str(tiny_bert), quantize=False, export_dir=tmp_path / "fp32", batch_size=3,
                                  **MINILM)
    assert fp32.score(QUERY, TEXTS) == pytest.approx(torch_scores, abs=1e-4)
    assert fp32.score(QUERY, TEXTS) == pytest.approx([fp32.score(QUERY, [t])[0] for t in TEXTS], abs=1e-5)

    assert main(["export-onnx", str(tiny_bert), str(tmp_path / "int8"), "--embedding"]) == 0
    spec = f"onnx-embedding:{tmp_path / 'int8'}"
    int8 = evaluator_from_spec(spec, **MINILM)
    assert isinstance(int8, OnnxEmbeddingEvaluator) and evaluator_spec(int8) == spec
    assert int8.score(QUERY, TEXTS) == pytest.approx(torch_scores, abs=0.1)
    # int8 activations are scaled per batch, so int8 embeds each text alone: exactly batch-independent
    together = int8.encode(TEXTS)
    alone = []
    for text in TEXTS:
        int8.clear_cache()
        alone.extend(int8.encode([text]))
    assert together == alone
    with pytest.raises(ValueError, match="an encoder"):  # an encoder export is not a cross-encoder
        evaluator_from_spec(f"onnx:{tmp_path / 'int8'}").score(QUERY, TEXTS)


def test_each_distinct_text_is_embedded_once_while_cached():
    calls = []

    def embed_texts(texts):
        calls.append(list(texts))
        return [[float(len(t)), float(t.count("e")), 1.0] for t in texts]

    evaluator = EmbeddingEvaluator(embed_texts=embed_texts, cache_size=3, **MINILM)
    first = evaluator.score(QUERY, ["Paris is big. It is old.", "Paris is big."])
    assert sorted(calls[-1]) == ["It is old.", "Paris is big."]  # sentences, each once
    again = evaluator.score(QUERY, ["Paris is big."])
    assert again == [first[1]] and len(calls) == 2  # the query once, the texts once: the rest from the caches
    evaluator.score(QUERY, ["a b.", "c d.", "e f."])
    assert len(evaluator._cache) == 3  # bounded: the oldest entries went


def test_a_callers_query_vector_serves_its_own_request_only():
    """One request's vector never judges another request with the same words (sync, threads, tasks)."""
    import asyncio
    import threading

    from crag_llamaindex.testing import HashingEmbedding

    model = HashingEmbedding()
    evaluator = EmbeddingEvaluator(embed_query=model.get_query_embedding,
                                   embed_texts=model.get_text_embedding_batch, unit="passage")
    off_topic = "Honey bees live in colonies with a single queen."
    honest = evaluator.score(QUERY, [off_topic])[0]
    forged = model.get_text_embedding(off_topic)  # a vector that makes the off-topic passage look relevant
    with evaluator.query_embedding(QUERY, forged):
        inside = evaluator.score(QUERY, [off_topic])[0]
        seen = {}
        worker = threading.Thread(target=lambda: seen.update(other=evaluator.score(QUERY, [off_topic])[0]))
        worker.start()
        worker.join()
    assert inside == 1.0 and inside > honest
    assert seen["other"] == honest  # another thread is another request: not the caller's vector
    assert evaluator.score(QUERY, [off_topic])[0] == honest  # after the request: the evaluator's own

    async def request(vector):
        with evaluator.query_embedding(QUERY, vector):
            await asyncio.sleep(0)
            return (await evaluator.aevaluate(QUERY, [off_topic])).scores[0]

    async def both():
        return await asyncio.gather(request(forged), request(None))

    assert asyncio.run(both()) == [1.0, honest]  # two tasks on one loop keep their own vectors


def test_llamaindex_postprocessor_uses_the_bundles_embedding_for_that_query_only():
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    from crag_llamaindex import CRAGPostprocessor, embedding_evaluator
    from crag_llamaindex.testing import HashingEmbedding

    model = HashingEmbedding()
    crag = CRAGPostprocessor(evaluator=embedding_evaluator(model, unit="passage"))
    off_topic = "Honey bees live in colonies with a single queen."
    nodes = [NodeWithScore(node=TextNode(text=off_topic))]
    _, plain = crag.correct(nodes, QueryBundle(QUERY))
    _, forged = crag.correct(nodes, QueryBundle(QUERY, embedding=model.get_text_embedding(off_topic)))
    _, after = crag.correct(nodes, QueryBundle(QUERY))
    assert forged.scores[0] > plain.scores[0] and after.scores == plain.scores
