"""The regular expressions ``grep(mode="regex")`` accepts, compiled with limits.

The ``regex`` engine lets one short pattern exhaust the process before any timeout
applies:

* recursion and subroutine calls (``(?R)``, ``(?0)``, ``(?1)``, ``(?+1)``, ``(?-1)``,
  ``(?&name)``, ``(?P>name)``) can call themselves without consuming text: ``(?R)``
  grew to 590 MB and a ``MemoryError`` within 1.5 s on a one-message database;
* counted repeats are unrolled when the pattern is compiled: ``((x?){1000}){1000}``
  takes 3.5 s and 930 MB, ``x{4294967294}`` never finishes.

So before compiling, a pattern is refused (``InvalidArgumentError``) if it is longer
than :data:`MAX_PATTERN_CHARS`, calls a group, uses verbose mode (``(?x)``, whose
free spacing and comments would hide both from this check), or unrolls to more than
:data:`MAX_EXPANDED_SIZE` items: each item of the pattern counts the product of the
counted repeats (``{n}``, ``{n,m}``, ``{n,}``) around it.

The checks read the pattern text the way the engine's parser does (escapes, character
classes with POSIX names and, under ``(?V1)``, nested sets, ``(?#...)`` comments);
where they cannot tell, they count more, never less.
"""

from __future__ import annotations

import re
from typing import Any

from mnesis.errors import InvalidArgumentError

__all__ = ["MAX_EXPANDED_SIZE", "MAX_PATTERN_CHARS", "check_pattern", "compile_pattern"]

MAX_PATTERN_CHARS = 2_000
"""The longest regular expression ``grep`` accepts."""
MAX_EXPANDED_SIZE = 10_000
"""The most items a pattern may unroll to, counted repeats multiplied out (``x{10000}``,
``(ab){5000}``, ``((a){100}){100}``). Compiling that many takes a few milliseconds."""

# An unescaped "(?" (after an even run of backslashes) then what the engine reads as
# a call: R or a digit, "&", "+", "-" not followed by a flag letter, "P" not followed
# by "<" (a named group) or "=" (a back-reference).
_CALL = re.compile(r"(?<!\\)(?:\\\\)*\(\?(?:[R0-9&+]|-(?![A-Za-z])|P(?![<=]))")
_INLINE_FLAGS = re.compile(r"(?<!\\)(?:\\\\)*\(\?\^?([A-Za-z0-9-]*)[:)]")
_QUANTIFIER = re.compile(r"\{(\d*)(?:,(\d*))?\}")
_POSIX = re.compile(r"\[:\^?\w*:\]")


def check_pattern(pattern: str) -> None:
    """Raise ``InvalidArgumentError`` if ``pattern`` is outside the limits above."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise InvalidArgumentError(
            f"regular expression is {len(pattern)} characters long; "
            f"at most {MAX_PATTERN_CHARS} are accepted"
        )
    if _CALL.search(pattern):
        raise InvalidArgumentError(
            "recursion and subroutine calls ((?R), (?1), (?&name), (?P>name)) are not "
            r"accepted in a regex grep; write the repetition out, or escape a literal "
            r"'(?' as '\(\?'"
        )
    flags = "".join(_INLINE_FLAGS.findall(pattern))
    if "x" in flags:
        raise InvalidArgumentError(
            "verbose mode ((?x)) is not accepted in a regex grep; "
            r"write the pattern without spaces or comments (match a space with ' ' or \s)"
        )
    size = _expanded_size(pattern, nested_sets="V1" in flags)
    if size > MAX_EXPANDED_SIZE:
        raise InvalidArgumentError(
            f"regular expression unrolls to more than {MAX_EXPANDED_SIZE} items through "
            "its counted repeats ({n} / {n,m}); use smaller repeat counts, or * and + "
            "where any number will do"
        )


def compile_pattern(pattern: str) -> Any:
    """Check and compile a user's regular expression (``InvalidArgumentError`` if it is
    not one, or is outside the limits)."""
    check_pattern(pattern)
    import regex  # here, not at the top: ``import mnesis`` stays light

    try:
        return regex.compile(pattern, regex.MULTILINE)
    except (regex.error, ValueError, OverflowError, RecursionError) as exc:
        shown = " ".join(str(exc).split())
        raise InvalidArgumentError(
            f"invalid regular expression {pattern[:80]!r}: {shown}"
        ) from None


def _class_end(pattern: str, start: int, nested_sets: bool) -> int:
    """The index after the character class opening at ``start``."""
    at = start + 1
    if pattern.startswith("^", at):
        at += 1
    depth, first = 1, True
    while at < len(pattern):
        char = pattern[at]
        if char == "\\":
            at += 2
        elif char == "[" and (posix := _POSIX.match(pattern, at)):
            at = posix.end()
        elif char == "[" and nested_sets:
            depth, at = depth + 1, at + 1
            if pattern.startswith("^", at):
                at += 1
            first = True
            continue
        elif char == "]" and not first:
            depth, at = depth - 1, at + 1
            if depth == 0:
                return at
        else:
            at += 1
        first = False
    return at


def _expanded_size(pattern: str, *, nested_sets: bool) -> int:
    """How many items ``pattern`` unrolls to, counted repeats multiplied out (capped
    just past :data:`MAX_EXPANDED_SIZE`)."""
    cap = MAX_EXPANDED_SIZE + 1
    totals = [0]
    """The size of each open group so far (the whole pattern first)."""
    last = 0
    """The size of the item just read: what a quantifier applies to."""
    at = 0
    while at < len(pattern):
        char = pattern[at]
        if char == "{" and (quantifier := _QUANTIFIER.match(pattern, at)):
            low, high = quantifier.group(1), quantifier.group(2)
            count = max(_count(low), _count(high) if high else 0, 1)
            grown = min(last * count, cap)
            totals[-1] = min(totals[-1] + grown - last, cap)
            last = grown
            at = quantifier.end()
            continue
        if char == "(" and pattern.startswith("(?#", at):
            close = pattern.find(")", at)
            at = len(pattern) if close < 0 else close + 1
            continue
        if char == "(":
            totals.append(0)
            last = 0
        elif char == ")":
            if len(totals) == 1:
                # An unbalanced ")": the engine refuses the pattern; count it all.
                return _whole_pattern_bound(pattern)
            last = inner = totals.pop()
            totals[-1] = min(totals[-1] + inner, cap)
        elif char in "*+?|":
            last = 0 if char == "|" else last
        else:
            if char == "[":
                end = _class_end(pattern, at, nested_sets)
            elif char == "\\":
                end = at + 2
            else:
                end = at + 1
            last = 1
            totals[-1] = min(totals[-1] + 1, cap)
            at = end
            continue
        at += 1
    return min(sum(totals), cap)


def _count(digits: str | None) -> int:
    if not digits:
        return 0
    return MAX_EXPANDED_SIZE + 1 if len(digits) > 6 else int(digits)


def _whole_pattern_bound(pattern: str) -> int:
    """Every item nested in every counted repeat: an upper bound whatever the nesting."""
    size = len(pattern)
    for quantifier in _QUANTIFIER.finditer(pattern):
        low, high = quantifier.group(1), quantifier.group(2)
        size *= max(_count(low), _count(high) if high else 0, 1)
        if size > MAX_EXPANDED_SIZE:
            return MAX_EXPANDED_SIZE + 1
    return size
