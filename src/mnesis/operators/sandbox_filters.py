"""Jinja2's built-in filters, guarded for the bounded sandbox.

Every filter a map template calls counts as a step of the render; the input of a
filter that turns its value into text is weighed first, and every result is
weighed after. The filters that can expand a value far beyond their input
(``center``, ``indent``, ``wordwrap``, ``replace``, ``join``, ``format``,
``slice``, ``batch``, ``tojson``'s indent) are checked *before* they run, and
``sum`` only adds numbers (adding lists is quadratic).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jinja2 import filters as jinja_filters
from jinja2.runtime import Context
from jinja2.utils import pass_context

from mnesis.operators.bounds import (
    RenderLimits,
    check_int,
    check_percent,
    check_size,
    check_text_method,
    check_weight,
    is_int,
    step,
    weight,
)
from mnesis.operators.errors import TemplateLimitError

__all__ = ["context_limits", "guard_filters"]

_Args = tuple[Any, ...]
_Kwargs = dict[str, Any]

_MAX_JSON_INDENT = 16

# Filters that do not turn their whole input into text, so a large input is fine.
_PLAIN = frozenset(
    {
        "abs", "attr", "batch", "count", "d", "default", "dictsort", "filesizeformat",
        "first", "float", "groupby", "int", "items", "last", "length", "list", "map",
        "max", "min", "random", "reject", "rejectattr", "reverse", "round", "select",
        "selectattr", "slice", "sort", "sum", "unique",
    }
)  # fmt: skip


def context_limits(context: Context) -> RenderLimits:
    """The limits of the bounded environment ``context`` renders in."""
    limits = getattr(context.environment, "limits", None)
    assert isinstance(limits, RenderLimits)
    return limits


@dataclass(slots=True)
class _Call:
    """One filter call: the render context and limits, the filtered value, the arguments."""

    context: Context
    limits: RenderLimits
    value: Any
    args: _Args
    kwargs: _Kwargs

    def arg(self, position: int, name: str, default: Any) -> Any:
        """The argument given at ``position`` or as ``name``, else ``default``."""
        if len(self.args) > position:
            return self.args[position]
        return self.kwargs.get(name, default)


_Precheck = Callable[[_Call], None]
"""Checks a call before its filter runs (``join`` also rewrites it)."""


def _center(call: _Call) -> None:
    width = call.arg(0, "width", 80)
    if is_int(width):
        check_size(width, call.limits, "the result of |center")


def _indent(call: _Call) -> None:
    width = call.arg(0, "width", 4)
    text = str(call.value)
    per_line = width if is_int(width) else len(str(width))
    check_size(len(text) + (text.count("\n") + 1) * max(per_line, 0), call.limits, "|indent")


def _wordwrap(call: _Call) -> None:
    width = call.arg(0, "width", 79)
    wrap = call.arg(2, "wrapstring", None)
    text = str(call.value)
    if is_int(width) and width > 0:
        wrap_len = (
            len(wrap) if isinstance(wrap, str) else len(call.context.environment.newline_sequence)
        )
        # A wrapped line holds more than half of ``width`` unless a newline ends it.
        lines = 2 * len(text) // width + text.count("\n") + 2
        check_size(len(text) + lines * wrap_len, call.limits, "the result of |wordwrap")


def _replace(call: _Call) -> None:
    old = call.arg(0, "old", None)
    new = call.arg(1, "new", None)
    count = call.arg(2, "count", None)
    if old is not None and new is not None:
        check_weight(new, call.limits, "the replacement of |replace")
        replaced = (str(old), str(new), count if is_int(count) else -1)
        check_text_method(str(call.value), "replace", replaced, {}, call.limits)


def _join(call: _Call) -> None:
    separator = call.arg(0, "d", "")
    attribute = call.arg(1, "attribute", None)
    items = list(call.value)
    if attribute is not None:
        getter = jinja_filters.make_attrgetter(call.context.environment, attribute)
        items = [getter(item) for item in items]
    size = weight(items, call.limits.max_value_chars) + len(str(separator)) * len(items)
    check_size(size, call.limits, "the result of |join")
    call.value, call.args, call.kwargs = items, (separator,), {}


def _format(call: _Call) -> None:
    check_percent(str(call.value), call.kwargs or call.args, call.limits)


def _slice(call: _Call) -> None:
    slices = call.arg(0, "slices", 1)
    fill = call.arg(1, "fill_with", None)
    if is_int(slices):
        if slices > call.limits.max_range:
            raise TemplateLimitError(
                f"|slice into more than {call.limits.max_range:,} parts is not allowed"
            )
        if fill is not None:
            check_size(
                weight(fill, call.limits.max_value_chars) * slices, call.limits, "|slice padding"
            )


def _batch(call: _Call) -> None:
    size = call.arg(0, "linecount", 1)
    fill = call.arg(1, "fill_with", None)
    if is_int(size) and fill is not None:
        padding = max(weight(fill, call.limits.max_value_chars), 1) * size
        check_size(padding, call.limits, "|batch padding")


def _sum(call: _Call) -> None:
    start = call.arg(1, "start", 0)
    if isinstance(start, bool) or not isinstance(start, int | float):
        raise TemplateLimitError(
            "|sum(start=...) is limited to numbers in a map template (adding lists "
            f"is quadratic), got {type(start).__name__}"
        )


def _tojson(call: _Call) -> None:
    indent = call.arg(0, "indent", None)
    if (is_int(indent) and indent > _MAX_JSON_INDENT) or (
        isinstance(indent, str) and len(indent) > _MAX_JSON_INDENT
    ):
        raise TemplateLimitError(f"|tojson(indent=...) is limited to {_MAX_JSON_INDENT}")


_PRECHECKS: dict[str, _Precheck] = {
    "batch": _batch,
    "center": _center,
    "format": _format,
    "indent": _indent,
    "join": _join,
    "replace": _replace,
    "slice": _slice,
    "sum": _sum,
    "tojson": _tojson,
    "wordwrap": _wordwrap,
}


def _guard(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    pass_arg = getattr(func, "jinja_pass_arg", None)
    kind = None if pass_arg is None else pass_arg.name
    precheck = _PRECHECKS.get(name)
    textual = name not in _PLAIN

    @pass_context
    def guarded(context: Context, value: Any, *args: Any, **kwargs: Any) -> Any:
        limits = context_limits(context)
        step()
        if textual:
            check_weight(value, limits, f"the input of |{name}")
        if precheck is not None:
            call = _Call(context, limits, value, args, kwargs)
            precheck(call)
            value, args, kwargs = call.value, call.args, call.kwargs
        if kind == "context":
            result = func(context, value, *args, **kwargs)
        elif kind == "eval_context":
            result = func(context.eval_ctx, value, *args, **kwargs)
        elif kind == "environment":
            result = func(context.environment, value, *args, **kwargs)
        else:
            result = func(value, *args, **kwargs)
        check_int(result, limits)
        check_weight(result, limits, f"the result of |{name}")
        return result

    guarded.__name__ = f"guarded_{name}"
    return guarded


def guard_filters(filters: dict[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """A guarded copy of ``filters`` (an environment's filter table)."""
    return {name: _guard(name, func) for name, func in filters.items()}
