"""Which language a text is analyzed in: a language code as set, "auto" detected, and the default "en"
switched by a Chinese or Japanese script.

"auto" reads the script first (kana means Japanese, Han without kana Chinese); anything else goes to py3langid
(restricted to the languages with a stopword list), falling back to English.
"""

from __future__ import annotations

import logging
from functools import lru_cache

from ..trace import log
from .analysis import CJK_LANGUAGES, supported_languages
from .writing_systems import foreign_script, script_language

__all__ = ["detect_language", "resolve", "switch_note"]


def resolve(code: str, text: str, *, tell: bool = True) -> str:
    """The language to analyze `text` in: `code` itself; for "auto" the language detected in `text`; and for
    the default "en", a text written in Chinese or Japanese script is analyzed as what its script says
    ("zh", "ja": English word analysis finds nothing in it), with a warning once per language (`tell=False`:
    none, for a reader that does not analyze the text's words)."""
    if code == "auto":
        return detect_language(text)
    if code == "en":
        script = script_language(text)
        if script is not None:
            if tell:
                _tell(script, switch_note(script))
            return script
        if tell and foreign_script(text):
            _tell("foreign", FOREIGN_NOTE)
    return code


def detect_language(text: str) -> str:
    """The language `text` is written in (ISO 639-1); English when it cannot tell."""
    script = script_language(text)
    if script is not None:
        return script
    if sum(1 for c in text if c.isalpha()) < 3:
        return "en"
    code, _ = _identifier().classify(text)  # type: ignore[attr-defined]
    return str(code)


#: A note for the trace when the default "en" meets Chinese or Japanese script (a question, or a passage the
#: refiner splits into sentences).
SWITCH_NOTE = "language 'en' met text in {name} script: analyzed as {code!r} (set language={code!r} or 'auto')"
_SCRIPT_NAMES = {"zh": "Chinese", "ja": "Japanese"}
_TOLD: set[str] = set()


def switch_note(code: str) -> str:
    """The trace note of a switch from "en" to `code`."""
    return SWITCH_NOTE.format(name=_SCRIPT_NAMES[code], code=code)


#: The warning when the default "en" meets a question in another script than Latin, Chinese or Japanese.
FOREIGN_NOTE = ("language 'en' met text not in Latin script: analyzed as English, so its words match only as "
                "written, without stems or stopwords (set language= its code, or 'auto')")


def _tell(key: str, note: str) -> None:
    """Warn once per process and kind: the default met text it was not set for."""
    if key not in _TOLD:
        _TOLD.add(key)
        log(logging.WARNING, "{note}; this is said once", note=note)


@lru_cache(maxsize=1)
def _identifier() -> object:
    """py3langid, restricted to the non-CJK languages crag has stopwords for."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE)
    known = set(identifier.labels)
    identifier.set_languages([c for c in supported_languages() if c in known and c not in CJK_LANGUAGES])
    return identifier
