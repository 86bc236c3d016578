"""The index text of a long non-ASCII text skips the CJK scan only when it surely holds
no CJK run (the byte pre-check of ``index_text``)."""

from __future__ import annotations

from mnesis.store.search_text import _CJK_RUN, _may_hold_cjk, cjk_bigrams, index_text

_RANGES = ((0x1100, 0x11FF), (0x3040, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF),
           (0xAC00, 0xD7AF), (0xF900, 0xFAFF))  # fmt: skip


def test_every_character_the_pattern_matches_passes_the_pre_check() -> None:
    chars = [chr(c) for low, high in _RANGES for c in range(low, high + 1)]
    assert _CJK_RUN.fullmatch("".join(chars))  # the ranges are the pattern's
    assert not _CJK_RUN.search(chr(0x10FF) + chr(0x1200) + chr(0x303F) + chr(0xFB00))
    assert all(_may_hold_cjk("→ é — " + char) for char in chars)


def test_a_text_of_arrows_and_dashes_is_kept_as_is() -> None:
    text = "\n".join(f"{n:>6}→    total — naïve café {n}" for n in range(200))
    assert not _may_hold_cjk(text)
    assert index_text(text) is text
    assert _may_hold_cjk("\ud800 lone")  # a surrogate goes the pattern's way (none found)
    assert index_text("\ud800 lone") == "\ud800 lone"


def test_cjk_inside_a_long_non_ascii_text_still_gets_its_bigrams() -> None:
    text = "     1→ total — " * 300 + "記憶管理" + " → 한국어"
    assert index_text(text) == text + "\n\u2063" + " ".join(cjk_bigrams(text))
    assert cjk_bigrams(text) == ["記憶", "憶管", "管理", "한국", "국어"]
