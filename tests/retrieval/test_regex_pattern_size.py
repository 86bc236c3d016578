"""The pattern-size check never counts less than the engine unrolls.

Patterns are generated as trees (so their true unrolled size is known), rendered with
the syntax that could mislead a reader of the text (``]`` first in a class, parentheses
in classes and ``(?#...)`` comments, POSIX names, escapes, digits in braces that are
not repeats), and checked: a pattern over the limit is always refused, one the engine
accepts within the limit compiles.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnesis.errors import InvalidArgumentError
from mnesis.retrieval.regex_pattern import MAX_EXPANDED_SIZE, check_pattern, compile_pattern


@dataclass(frozen=True)
class Node:
    text: str
    size: int
    """Items once unrolled: atoms count 1, a counted repeat multiplies."""


_ATOMS = st.sampled_from(
    ["a", "b", ".", "x", r"\(", r"\)", r"\[", r"\{", r"\d", r"\w", r"\\", r"\p{L}", r"\x41"]
).map(lambda t: Node(t, 1))
_ESCAPES = st.sampled_from([r"\N{DIGIT NINE}", r"\u0041"]).map(lambda t: Node(t, 1))
_CLASSES = st.sampled_from(
    ["[]()]", "[^](]", "[()]", "[[:alpha:])(]", "[(?R)]", r"[\])(]", "[a-z{}]", "[{9}]"]
).map(lambda t: Node(t, 1))
_COMMENTS = st.sampled_from(["(?#(", "(?#({99}", "(?#[", "(?#]"]).map(lambda t: Node(t + ")", 0))


def _repeat(node: Node, low: int, high: int | None, form: str) -> Node:
    body = node.text if node.size <= 1 and len(node.text) <= 2 else f"(?:{node.text})"
    if form == "exact":
        return Node(f"{body}{{{low}}}", node.size * max(low, 1))
    if form == "open":
        return Node(f"{body}{{{low},}}", node.size * max(low, 1))
    top = max(low, high or 0)
    return Node(f"{body}{{{low},{top}}}?", node.size * max(top, 1))


_COUNTS = st.integers(0, 120) | st.sampled_from([150, 400, 2_000, 12_000])


def _extend(children: st.SearchStrategy[Node]) -> st.SearchStrategy[Node]:
    sequence = st.lists(children, min_size=1, max_size=4).map(
        lambda ns: Node("".join(n.text for n in ns), sum(n.size for n in ns))
    )
    group = st.tuples(st.sampled_from(["(", "(?:", "(?=", "(?>"]), sequence).map(
        lambda t: Node(f"{t[0]}{t[1].text})", t[1].size)
    )
    branch = st.lists(sequence, min_size=2, max_size=3).map(
        lambda ns: Node("(?:" + "|".join(n.text for n in ns) + ")", sum(n.size for n in ns))
    )
    repeat = st.builds(
        _repeat,
        st.one_of(group, branch, children),
        _COUNTS,
        st.none() | _COUNTS,
        st.sampled_from(["exact", "open", "range"]),
    )
    simple = st.tuples(children, st.sampled_from(["*", "+", "?", "*?", "++"])).map(
        lambda t: Node(f"(?:{t[0].text}){t[1]}", t[0].size)
    )
    return st.one_of(sequence, group, branch, repeat, simple)


PATTERNS = st.recursive(st.one_of(_ATOMS, _ESCAPES, _CLASSES, _COMMENTS), _extend, max_leaves=12)


@pytest.mark.filterwarnings("ignore:Generating overly large repr")
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(PATTERNS)
def test_a_pattern_over_the_limit_is_refused_and_one_within_it_compiles(node: Node) -> None:
    if node.size > MAX_EXPANDED_SIZE:
        with pytest.raises(InvalidArgumentError):
            check_pattern(node.text)
        return
    try:
        check_pattern(node.text)
    except InvalidArgumentError as refused:
        # Counting more than the engine is allowed (never less): the text is still a
        # valid pattern, and only the size or a class holding "(?R)" refused it.
        assert "unrolls" in str(refused) or "(?R)" in node.text
        regex.compile(node.text)
        return
    compile_pattern(node.text)


@pytest.mark.parametrize(
    ("pattern", "size"),
    [
        ("a{10000}", 10_000),
        ("(ab){5000}", 10_000),
        ("((a){100}){100}", 10_000),
        ("[]()]{100}(x){99}", 199),
        ("(?#({9999)a{9999}", 9_999),
    ],
)
def test_the_limit_is_inclusive(pattern: str, size: int) -> None:
    assert size <= MAX_EXPANDED_SIZE
    compile_pattern(pattern)
    with pytest.raises(InvalidArgumentError, match="unrolls"):
        check_pattern(pattern + f"c{{{MAX_EXPANDED_SIZE - size + 1}}}")


_BIG = "abcdefghijklmnopqrst"


@pytest.mark.parametrize(
    "pattern",
    [
        f"(?:{_BIG}[)(]){{1000}}",
        f"(?:{_BIG}[])(]){{1000}}",
        f"(?:{_BIG}[^])(]){{1000}}",
        f"(?:{_BIG}[[:alpha:])(]){{1000}}",
        f"(?:{_BIG}[\\])(]){{1000}}",
        f"(?:{_BIG}(?#()){{1000}}",
        f"(?V1)(?:{_BIG}[[a])(]){{1000}}",
        f"(?:{_BIG}\\)()){{1000}}",
    ],
)
def test_parentheses_in_classes_comments_and_escapes_do_not_hide_a_repeat(
    pattern: str,
) -> None:
    regex.compile(pattern)  # a valid pattern: the group of 20 items repeats 1000 times
    with pytest.raises(InvalidArgumentError, match="unrolls"):
        check_pattern(pattern)
