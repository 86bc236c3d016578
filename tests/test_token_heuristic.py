"""The heuristic token count's word count without ``str.split`` (longer ASCII texts)
is ``len(text.split())``."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mnesis.tokens.estimator import _words

_ascii_with_every_space = st.text(
    alphabet=st.sampled_from("ab1.{ \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x00\x7f"), max_size=300
)


def _count(text: str) -> int:
    data = text.encode("utf-8", "surrogatepass")
    return _words(text, data, len(data) == len(text))


@given(_ascii_with_every_space)
def test_ascii_words_are_what_split_gives(text: str) -> None:
    assert _count(text) == len(text.split())


@given(st.text(max_size=200))
def test_any_text_words_are_what_split_gives(text: str) -> None:
    assert _count(text) == len(text.split())


def test_long_text_edges() -> None:
    for text in (
        "x" * 100,
        " " * 100,
        " a" * 50,
        "a " * 50,
        "\x1f".join("word" * 3 for _ in range(20)),
    ):
        assert _count(text) == len(text.split())
