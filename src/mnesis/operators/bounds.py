"""The bounds of one map-template render, and the checks that keep a render within them.

:class:`RenderLimits` holds the bounds; :class:`RenderBudget` counts the steps and
watches the deadline of one render (the current one is in a context variable, so
the sandbox's hooks find it without being passed it). The ``check_*`` functions
run *before* an operation that could expand a value (``*``, ``%``,
``str.format``, ``str.replace``, …) and raise
:class:`~mnesis.operators.errors.TemplateLimitError` if its result would be over
the bound, so no single operation allocates beyond it. :func:`weight` measures a
value by a walk that stops just past the limit, so even a deeply shared
structure costs at most ``limit`` visits.
"""

from __future__ import annotations

import contextlib
import re
import string
import time
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from jinja2.utils import Namespace

from mnesis.operators.errors import TemplateLimitError

__all__ = [
    "RenderBudget",
    "RenderLimits",
    "check_binop",
    "check_format",
    "check_int",
    "check_percent",
    "check_size",
    "check_text_method",
    "check_weight",
    "current_budget",
    "is_int",
    "step",
    "use_budget",
    "weight",
]


@dataclass(frozen=True, slots=True)
class RenderLimits:
    """The bounds of one render (see the module invariants)."""

    max_output_chars: int = 1_000_000
    """The rendered prompt, in characters."""
    max_value_chars: int = 1_000_000
    """The largest string, list or other value an operation may build, in characters."""
    max_range: int = 100_000
    """The most numbers one ``range()`` may give."""
    max_steps: int = 1_000_000
    """Loop iterations, calls and filter applications of one render."""
    max_seconds: float = 5.0
    """Wall time of one render."""
    max_int_bits: int = 65_536
    """The largest integer an arithmetic operation may produce, in bits."""


class RenderBudget:
    """The steps and the deadline of one render; :attr:`abandoned` stops it early."""

    __slots__ = ("abandoned", "deadline", "limits", "steps")

    def __init__(self, limits: RenderLimits) -> None:
        self.limits = limits
        self.steps = 0
        self.deadline = time.monotonic() + limits.max_seconds
        self.abandoned = False

    def restart(self) -> None:
        """Start the clock now (when the render actually begins)."""
        self.steps = 0
        self.deadline = time.monotonic() + self.limits.max_seconds

    def step(self) -> None:
        """Count one step; raise :class:`TemplateLimitError` when the budget is spent."""
        self.steps += 1
        if self.abandoned:
            raise TemplateLimitError(
                f"rendering was abandoned after {self.limits.max_seconds:g} s "
                "(the template took too long for this input)"
            )
        if self.steps > self.limits.max_steps:
            raise TemplateLimitError(
                f"rendering took more than {self.limits.max_steps:,} steps (loop iterations, "
                "calls, filters, operators); make the template loop less for this input"
            )
        if time.monotonic() > self.deadline:
            raise TemplateLimitError(
                f"rendering took longer than {self.limits.max_seconds:g} s; "
                "make the template do less work per input"
            )


_BUDGET: ContextVar[RenderBudget | None] = ContextVar("mnesis_render_budget", default=None)


def current_budget() -> RenderBudget | None:
    """The budget of the render running in this context, if any."""
    return _BUDGET.get()


@contextlib.contextmanager
def use_budget(budget: RenderBudget) -> Iterator[RenderBudget]:
    """Make ``budget`` the current one for the ``with`` block."""
    token = _BUDGET.set(budget)
    try:
        yield budget
    finally:
        _BUDGET.reset(token)


def step() -> None:
    """Count one step of the current render, if there is one."""
    budget = _BUDGET.get()
    if budget is not None:
        budget.step()


# -- weights --------------------------------------------------------------------
def weight(value: object, limit: int) -> int:
    """Roughly the characters ``str(value)`` would take, counted up to just past
    ``limit`` (so the walk costs at most ``limit`` visits even for shared, nested
    containers)."""
    total = 0
    stack = [value]
    while stack:
        current = stack.pop()
        if isinstance(current, str | bytes | bytearray):
            total += len(current)
        elif isinstance(current, list | tuple | set | frozenset):
            total += 2 + len(current)
            if total <= limit:
                stack.extend(current)
        elif isinstance(current, dict):
            total += 2 + 2 * len(current)
            if total <= limit:
                stack.extend(current.keys())
                stack.extend(current.values())
        elif isinstance(current, Namespace):
            attrs: dict[str, Any] = object.__getattribute__(current, "_Namespace__attrs")
            stack.append(attrs)
        elif isinstance(current, int) and not isinstance(current, bool):
            total += current.bit_length() // 3 + 1
        else:
            total += 8
        if total > limit:
            return total
    return total


def check_weight(value: object, limits: RenderLimits, what: str) -> None:
    """Raise :class:`TemplateLimitError` if ``value`` weighs more than ``max_value_chars``."""
    if weight(value, limits.max_value_chars) > limits.max_value_chars:
        raise TemplateLimitError(
            f"{what} would be over {limits.max_value_chars:,} characters; "
            "map templates may not build values that large"
        )


def check_size(size: int, limits: RenderLimits, what: str) -> None:
    """Raise :class:`TemplateLimitError` if a value of ``size`` characters is too large."""
    if size > limits.max_value_chars:
        raise TemplateLimitError(
            f"{what} would be {size:,} characters, over the limit of "
            f"{limits.max_value_chars:,}; map templates may not build values that large"
        )


def _int_too_large(limits: RenderLimits) -> TemplateLimitError:
    return TemplateLimitError(
        f"an integer of more than {limits.max_int_bits:,} bits would be built; "
        "map templates may not compute numbers that large"
    )


def check_int(value: object, limits: RenderLimits) -> None:
    """Raise :class:`TemplateLimitError` if ``value`` is an integer over ``max_int_bits``."""
    if is_int(value) and value.bit_length() > limits.max_int_bits:  # type: ignore[attr-defined]
        raise _int_too_large(limits)


def is_int(value: object) -> bool:
    """Whether ``value`` is an ``int`` and not a ``bool``."""
    return isinstance(value, int) and not isinstance(value, bool)


# -- string formatting ------------------------------------------------------------
_PERCENT = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?[a-zA-Z%]")
_DIGITS = re.compile(r"\d+")


def _check_number(text: str, limits: RenderLimits) -> int:
    if len(text) > 9 or int(text) > limits.max_value_chars:
        raise TemplateLimitError(
            f"a field width or precision of {text[:12]} in a format string is over "
            f"{limits.max_value_chars:,}"
        )
    return int(text)


def _largest_arg(args: Iterable[Any], limits: RenderLimits) -> int:
    largest = 0
    for arg in args:
        size = weight(arg, limits.max_value_chars)
        check_size(size, limits, "a format argument")
        largest = max(largest, size)
    return largest


def check_percent(fmt: str | bytes, right: Any, limits: RenderLimits) -> None:
    """Check ``fmt % right`` before it runs: widths, precisions and the result size."""
    text = fmt.decode("latin-1") if isinstance(fmt, bytes) else fmt
    args = right if isinstance(right, tuple) else (right,)
    values = list(right.values()) if isinstance(right, dict) else list(args)
    fields = 0
    padding = 0
    for match in _PERCENT.finditer(text):
        if match.group(0) == "%%":
            continue
        fields += 1
        for number in match.groups():
            if number == "*":
                for arg in args:
                    if is_int(arg) and abs(arg) > limits.max_value_chars:
                        raise TemplateLimitError(
                            f"a '*' width of {arg} in a format string is over "
                            f"{limits.max_value_chars:,}"
                        )
            elif number is not None:
                padding += _check_number(number, limits)
    largest = _largest_arg(values, limits)
    check_size(len(text) + fields * largest + padding, limits, "a formatted string")


def check_format(
    fmt: str, args: tuple[Any, ...], kwargs: dict[str, Any], limits: RenderLimits
) -> None:
    """Check ``fmt.format(*args, **kwargs)`` (or ``format_map``) before it runs."""
    fields = 0
    padding = 0
    nested = False
    for _literal, field, spec, _conversion in string.Formatter().parse(fmt):
        if field is None:
            continue
        fields += 1
        if spec:
            nested = nested or "{" in spec
            padding += sum(_check_number(d, limits) for d in _DIGITS.findall(spec))
    values = [*args, *kwargs.values()]
    mappings = [a for a in args if isinstance(a, dict)]
    for mapping in mappings:
        values.extend(mapping.values())
    if nested:
        for value in values:
            if is_int(value) and abs(value) > limits.max_value_chars:
                raise TemplateLimitError(
                    f"a nested format width of {value} is over {limits.max_value_chars:,}"
                )
            if is_int(value):
                padding += abs(value)
    largest = _largest_arg(values, limits)
    check_size(len(fmt) + fields * largest + padding, limits, "a formatted string")


# -- methods of str and bytes ---------------------------------------------------------
def check_text_method(
    owner: str | bytes | bytearray,
    name: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    limits: RenderLimits,
) -> tuple[Any, ...]:
    """Check an expanding method of a string before it runs; returns the arguments to
    call it with (``join`` gets its iterable as a list)."""
    what = f"the result of .{name}()"
    if name in ("center", "ljust", "rjust", "zfill") and args and is_int(args[0]):
        check_size(args[0], limits, what)
    elif name == "expandtabs":
        tabsize = args[0] if args else kwargs.get("tabsize", 8)
        if is_int(tabsize):
            tabs = owner.count(b"\t" if isinstance(owner, bytes | bytearray) else "\t")  # type: ignore[arg-type]
            check_size(len(owner) + tabs * max(tabsize, 0), limits, what)
    elif name == "replace" and len(args) >= 2:
        old, new = args[0], args[1]
        count = args[2] if len(args) > 2 else kwargs.get("count", -1)
        if isinstance(old, str | bytes | bytearray) and isinstance(new, str | bytes | bytearray):
            hits = len(owner) + 1 if not old else owner.count(old)  # type: ignore[arg-type]
            if is_int(count) and count >= 0:
                hits = min(hits, count)
            check_size(len(owner) + hits * max(len(new) - len(old), 0), limits, what)
    elif name == "join" and args:
        items = list(args[0])
        check_size(weight(items, limits.max_value_chars) + len(owner) * len(items), limits, what)
        return (items, *args[1:])
    elif name == "translate" and args and isinstance(args[0], dict):
        longest = max((len(v) for v in args[0].values() if isinstance(v, str | bytes)), default=1)
        check_size(len(owner) * max(longest, 1), limits, what)
    elif name in ("format", "format_map") and isinstance(owner, str):
        check_format(owner, args, kwargs, limits)
    return args


def check_binop(operator: str, left: Any, right: Any, limits: RenderLimits) -> None:
    """Check ``left <operator> right`` before it runs."""
    if operator == "*":
        if is_int(left) and is_int(right):
            if left.bit_length() + right.bit_length() > limits.max_int_bits + 1:
                raise _int_too_large(limits)
            return
        for seq, times in ((left, right), (right, left)):
            if isinstance(seq, str | bytes | bytearray | list | tuple) and is_int(times):
                if times > 0:
                    if times > limits.max_value_chars:
                        check_size(times, limits, "a repeated value")
                    size = weight(seq, limits.max_value_chars) * times
                    check_size(size, limits, "a repeated value")
                return
    elif operator == "**":
        if (
            is_int(left)
            and is_int(right)
            and right > 0
            and abs(left) > 1
            and (right > limits.max_int_bits or right * left.bit_length() > limits.max_int_bits)
        ):
            raise _int_too_large(limits)
    elif operator == "%" and isinstance(left, str | bytes):
        check_percent(left, right, limits)
