"""Which language a fact's value is written in, for the sample's strata and the page's lines:
English, Traditional Chinese or other. A rough look at the letters, enough to stratify: the
value is one short sentence, in the traveller's language or in English (extraction prompt)."""

from __future__ import annotations

import unicodedata

from .choices import Language

# CJK Unified Ideographs (and extension A, compatibility ideographs): Han characters.
_HAN = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF))


def _is_han(char: str) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in _HAN)


def value_language(value: str) -> Language:
    """zh-Hant when the value has Han characters (the airline's Chinese travellers write
    Traditional Chinese; Japanese kana makes it "other"), English when every letter is Latin
    (ASCII), else other."""
    letters = [c for c in value if c.isalpha()]
    if any(_is_han(c) for c in letters):
        if any(unicodedata.name(c, "").startswith(("HIRAGANA", "KATAKANA")) for c in letters):
            return Language.OTHER
        return Language.ZH_HANT
    if letters and all(c.isascii() for c in letters):
        return Language.EN
    return Language.OTHER
