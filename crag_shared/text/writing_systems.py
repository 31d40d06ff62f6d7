"""Writing systems: what a text's script says about it, decided in C and from its start (Chinese and Japanese by
kana and Han, and whether most letters are outside the Latin script), and the character ranges of the scripts
written without spaces."""

from __future__ import annotations

import re

__all__ = ["CJK", "HAN", "HIRAGANA", "KATAKANA", "foreign_script", "has_cjk", "script_language"]

HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
KATAKANA = "\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f"
HIRAGANA = "\u3040-\u309f"
CJK = HAN + KATAKANA + HIRAGANA
_CJK = re.compile(f"[{CJK}]")
_KANA = re.compile(f"[{HIRAGANA}{KATAKANA}]")
_HAN = re.compile(f"[{HAN}]")
_LETTER = re.compile(r"[^\W\d_]")
#: a letter outside the Latin blocks (Basic, Latin-1, Extended-A/B and Additional, ligatures, full-width, accents)
_NOT_LATIN = re.compile(r"[^\W\d_A-Za-z\u00C0-\u024F\u0300-\u036F\u1E00-\u1EFF\uFB00-\uFB06\uFF21-\uFF5A]")
#: A text's script is read from its start: a passage of 4 MB costs what a question does.
SCRIPT_SAMPLE = 400


def script_language(text: str) -> str | None:
    """"ja" for text with kana, "zh" for text that is largely Han (a fifth of its letters or more), else
    None: what the script alone tells, with no identifier to load."""
    text = text[:SCRIPT_SAMPLE]
    if not _NOT_LATIN.search(text):  # the common case, in C: every refined English passage comes through here
        return None
    if _KANA.search(text):
        return "ja"
    letters = len(_LETTER.findall(text))
    return "zh" if letters and len(_HAN.findall(text)) * 5 >= letters else None


def has_cjk(text: str) -> bool:
    """Whether `text` holds a Han, kana or katakana character (a script written without spaces)."""
    return bool(_CJK.search(text))


def foreign_script(text: str) -> bool:
    """Whether most letters of `text` are outside the Latin script (Cyrillic, Greek, Arabic, Hangul...): English
    analysis still matches such words as written, but without stems or stopwords."""
    text = text[:SCRIPT_SAMPLE]
    return bool(_NOT_LATIN.search(text)) and len(_NOT_LATIN.findall(text)) * 2 > len(_LETTER.findall(text))
