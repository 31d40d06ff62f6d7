import pytest

from crag_shared import CRAGConfig, Origin, Passage, StripRefiner
from crag_shared.corrector.configured import config_refiner


def words(n, word="w"):
    return " ".join(f"{word}{i}" for i in range(n))


def test_fixed_num_makes_50_word_windows_and_merges_a_short_tail():
    refiner = StripRefiner("fixed_num")
    pieces = refiner.decompose([(0, words(120))])
    assert [len(p.text.split()) for p in pieces] == [50, 70]  # the 20-word tail joins the window before
    pieces = refiner.decompose([(0, words(130))])
    assert [len(p.text.split()) for p in pieces] == [50, 50, 30]  # a 30-word tail stands alone
    assert [p.position for p in pieces] == [0, 1, 2]


def test_offsets_point_into_the_source_text():
    text = "  Alpha beta gamma.  Delta epsilon zeta eta. Theta iota kappa lambda mu.\nNu xi omicron pi rho. "
    for mode in ("fixed_num", "excerption", "selection"):
        for piece in StripRefiner(mode, window_words=4, strip_words=6).decompose([(3, text)]):
            assert text[piece.start:piece.end] == piece.text
            assert piece.source_index == 3


def test_excerption_keeps_one_or_two_sentences_as_one_strip():
    refiner = StripRefiner("excerption")
    text = "Dr. Smith went to Washington. He arrived at 5 p.m. on Jan. 3."
    pieces = refiner.decompose([(0, text)])
    assert [p.text for p in pieces] == [text]


def test_excerption_groups_sentences_into_strips_of_a_few_sentences():
    sentences = [f"Sentence number {i} has exactly eight words here." for i in range(10)]
    pieces = StripRefiner("excerption", strip_words=20).decompose([(0, " ".join(sentences))])
    # 8-word sentences packed until a strip reaches 20 words: 3 sentences per strip, a 1-sentence tail
    assert [p.text.count("Sentence") for p in pieces] == [3, 3, 3, 1]
    assert all(p.text.endswith(".") for p in pieces)


def test_excerption_merges_tiny_fragments_into_the_previous_strip():
    text = ("The first sentence talks about the history of the city in detail. "
            "The second sentence describes the river and the bridges across it. "
            "Then a third sentence covers the cathedral and its long construction. Yes.")
    pieces = StripRefiner("excerption", strip_words=10, min_words=5).decompose([(0, text)])
    assert pieces[-1].text.endswith("construction. Yes.")


def test_selection_keeps_each_passage_whole():
    pieces = StripRefiner("selection").decompose([(0, "  one two three  "), (1, "four"), (2, "   ")])
    assert [(p.source_index, p.text) for p in pieces] == [(0, "one two three"), (1, "four")]


def test_select_filters_keeps_top_k_and_recomposes_in_original_order():
    passages = [Passage(f"text {i}", id=f"p{i}", title=f"T{i}", url=f"https://x/{i}") for i in range(3)]
    refiner = StripRefiner("selection", top_k=2, threshold=-0.5)
    pieces = refiner.decompose([(i, p.text) for i, p in enumerate(passages)])
    strips = refiner.select(pieces, [0.1, -0.9, 0.8], passages, Origin.INTERNAL)
    assert [s.source_id for s in strips] == ["p0", "p2"]  # -0.9 is below -0.5; order is original
    assert [s.score for s in strips] == [0.1, 0.8]
    assert strips[1].title == "T2" and strips[1].url == "https://x/2" and strips[1].origin is Origin.INTERNAL
    top1 = StripRefiner("selection", top_k=1).select(pieces, [0.1, -0.9, 0.8], passages, Origin.INTERNAL)
    assert [s.source_id for s in top1] == ["p2"]


def test_select_keeps_duplicate_strips_once():
    passages = [Passage("Same text.", id="a"), Passage("same   TEXT.", id="b"), Passage("Other.", id="c")]
    refiner = StripRefiner("selection")
    pieces = refiner.decompose([(i, p.text) for i, p in enumerate(passages)])
    strips = refiner.select(pieces, [0.2, 0.9, 0.0], passages, Origin.WEB)
    assert [s.source_id for s in strips] == ["b", "c"]


def test_very_long_passages_are_cut_at_max_chars():
    refiner = StripRefiner("fixed_num", max_chars=1000)
    pieces = refiner.decompose([(0, "word " * 200_000)])
    assert sum(len(p.text) for p in pieces) < 1000


@pytest.mark.parametrize("kwargs,message", [
    ({"mode": "chunks"}, "mode must be"),
    ({"top_k": 0}, "top_k"),
    ({"threshold": -2}, "threshold"),
])
def test_bad_refiner_config_raises(kwargs, message):
    with pytest.raises(ValueError, match=message):
        StripRefiner(**kwargs)


def test_unknown_language_fails_at_construction():
    with pytest.raises(Exception, match=r"[Ll]anguage"):
        StripRefiner("excerption", language="xx")


def test_precompiled_patterns_split_exactly_like_sentence_splitter(bench_dir):
    import json

    import regex
    import sentence_splitter

    from crag_shared.text.sentences import splitter_for

    fast = splitter_for("en")
    assert type(fast).__module__ == "crag_shared._sentence_splitter"  # our private, compiled-pattern copy
    assert sentence_splitter.regex is regex  # the library everyone else imports is untouched
    texts = ["Dr. Smith met Mr. J. R. R. Tolkien in the U.S.A. on No. 5 Baker St. in 1925. He left. 'Why?' "
             "she asked... (It rained.) Then: No. 12 won! The end", "A.B.C. Corp. was founded in 1901."]
    for line in (bench_dir / "popqa_ctxs.jsonl").open(encoding="utf-8"):
        texts += [c["text"] for c in json.loads(line)["ctxs"]]
    plain = sentence_splitter.SentenceSplitter(language="en")
    expected = [plain.split(text) for text in texts]
    assert [fast.split(text) for text in texts] == expected


@pytest.mark.parametrize("mode", ["excerption", "fixed_num", "selection"])
def test_no_strip_is_longer_than_max_strip_chars_even_without_punctuation(mode):
    text = " ".join(f"word{i}" for i in range(20_000))  # ~150,000 characters, no sentence end
    refiner = StripRefiner(mode, top_k=1000, threshold=-1.0, max_strip_chars=500)
    pieces = refiner.decompose([(0, text)])
    assert pieces and all(len(p.text) <= 500 for p in pieces)
    assert all(p.text == text[p.start:p.end] and not p.text.startswith(" ") for p in pieces)
    assert "".join(p.text for p in pieces).replace(" ", "") == text[:refiner.max_chars].replace(" ", "")


def test_max_strip_chars_is_a_checked_setting():
    with pytest.raises(ValueError, match="max_strip_chars"):
        StripRefiner(max_strip_chars=10)
    with pytest.raises(ValueError, match="max_strip_chars"):
        CRAGConfig(max_strip_chars="2000")  # type: ignore[arg-type]
    assert config_refiner(CRAGConfig(max_strip_chars=300)).max_strip_chars == 300


def test_long_texts_are_split_in_bounded_pieces_with_the_same_sentences():
    from crag_shared.text.sentences import SPLIT_PIECE_CHARS, _piece_spans, _pieces, sentence_spans

    sentences = [f"Sentence number {i} tells of Paris and the Seine." for i in range(3000)]
    text = " ".join(sentences)  # ~150,000 characters
    pieces = _pieces(text)
    assert len(pieces) > 1 and all(b - a <= SPLIT_PIECE_CHARS for a, b in pieces)
    assert pieces[0][0] == 0 and pieces[-1][1] == len(text)
    assert all(a == previous_end for (a, _), (_, previous_end) in zip(pieces[1:], pieces))
    spans = sentence_spans("en", text)
    assert [text[a:b] for a, b in spans] == sentences  # cut only where sentences end: nothing changes
    assert [text[a:b] for a, b in spans] == [text[a:b] for a, b in _piece_spans("en", text)]
    no_punctuation = "word " * 30_000
    assert all(b - a <= SPLIT_PIECE_CHARS for a, b in _pieces(no_punctuation))
    assert "".join(no_punctuation[a:b] for a, b in sentence_spans("en", no_punctuation)).replace(" ", "") == (
        no_punctuation.replace(" ", ""))
