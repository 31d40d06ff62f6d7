"""The text wing: what crag knows about language, with its word lists as packaged tables (`tables/`).

`words.py` (tokens, the English fold), `writing_systems.py` (scripts), `sentences.py`, `analysis.py` (each
language's tokens, stopwords and stems), `detection.py` ("auto", script switches), `measure.py` (the lexical
measure), `reading.py` (an English question read for its answer), `follow_up.py` (the per-language follow-up
rule) and `knowledge.py` (the tables' reader).
"""

from __future__ import annotations

from .analysis import Analyzer, analyzer, check_language, supported_languages
from .detection import detect_language, resolve
from .follow_up import follow_up_languages, follow_up_pronoun
from .measure import QuestionWords
from .reading import Reading
from .sentences import sentence_spans
from .words import fold, titled, words
from .writing_systems import has_cjk, script_language

__all__ = ["Analyzer", "QuestionWords", "Reading", "analyzer", "check_language", "detect_language", "fold",
           "follow_up_languages", "follow_up_pronoun", "has_cjk", "resolve", "script_language", "sentence_spans",
           "supported_languages", "titled", "words"]
