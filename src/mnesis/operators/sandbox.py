"""The bounded Jinja2 sandbox that map templates render in.

Jinja2's own sandbox keeps a template away from Python internals; this one also
bounds what one render can cost, so a template cannot hang a worker or exhaust
memory whatever the input. Invariants, with the defaults of :class:`RenderLimits`:

* **Steps.** Every loop iteration, call, filter and intercepted operator is a
  step; a render takes at most ``max_steps`` of them and stops at the first step
  after ``max_seconds`` of wall time. Loops are the only way a template repeats
  work, and each one is counted (its iterable is wrapped when the template is
  compiled), as are macro calls and recursive loops.
* **Values.** Nothing the template builds (``*``, ``+``, ``~``, ``%``, list and
  dict literals, ``str.format``, ``str.join``/``replace``/``center``/…, filter
  results, block and macro buffers) may weigh more than ``max_value_chars``, and
  the expanding operations are checked *before* they run, so a single operation
  never allocates beyond the bound. ``range()`` yields at most ``max_range``
  numbers, an integer has at most ``max_int_bits`` bits, and the environment is
  immutable (``list.append`` and friends are refused).
* **Output.** The rendered text is at most ``max_output_chars`` long; rendering
  stops as soon as it would be longer.

Going over a bound raises :class:`~mnesis.operators.errors.TemplateLimitError`.
The bounds and checks live in :mod:`mnesis.operators.bounds`, the guarded
filters in :mod:`mnesis.operators.sandbox_filters`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from types import BuiltinMethodType
from typing import Any

from jinja2 import StrictUndefined, nodes
from jinja2.runtime import Context
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import generate_lorem_ipsum, pass_context
from jinja2.visitor import NodeTransformer

from mnesis.operators.bounds import (
    RenderBudget,
    RenderLimits,
    check_binop,
    check_format,
    check_int,
    check_size,
    check_text_method,
    check_weight,
    current_budget,
    is_int,
    step,
)
from mnesis.operators.errors import TemplateLimitError
from mnesis.operators.sandbox_filters import context_limits, guard_filters

__all__ = ["BoundedEnvironment"]


# -- compile-time rewriting ------------------------------------------------------------
STEPS_FILTER = "_mnesis_steps"
CONCAT_FILTER = "_mnesis_concat"
VALUE_FILTER = "_mnesis_value"


class _Counted:
    """An iterable of a template loop whose iterations are counted as steps."""

    __slots__ = ("_budget", "_iterator", "_source")

    def __init__(self, source: Any, budget: RenderBudget | None) -> None:
        self._source = source
        self._iterator: Iterator[Any] = iter(source)
        self._budget = budget

    def __iter__(self) -> _Counted:
        return self

    def __next__(self) -> Any:
        if self._budget is not None:
            self._budget.step()
        return next(self._iterator)

    def __len__(self) -> int:
        return len(self._source)


class _Rewriter(NodeTransformer):
    """Count every loop's iterations, bound ``~`` and check every literal's size."""

    def __init__(self, environment: BoundedEnvironment) -> None:
        self.environment = environment

    def _wrap(self, node: nodes.Node, name: str) -> nodes.Expr:
        wrapped = nodes.Filter(node, name, [], [], None, None, lineno=node.lineno)
        wrapped.set_environment(self.environment)
        return wrapped

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)
        node.iter = self._wrap(node.iter, STEPS_FILTER)
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        listed = nodes.List(node.nodes, lineno=node.lineno)
        listed.set_environment(self.environment)
        return self._wrap(listed, CONCAT_FILTER)

    def _literal(self, node: nodes.Expr) -> nodes.Node:
        self.generic_visit(node)
        if getattr(node, "ctx", "load") != "load":
            return node
        return self._wrap(node, VALUE_FILTER)

    visit_List = _literal
    visit_Tuple = _literal
    visit_Dict = _literal


# -- the environment ---------------------------------------------------------------------
class BoundedEnvironment(ImmutableSandboxedEnvironment):
    """An immutable Jinja2 sandbox whose renders are bounded by ``limits``."""

    intercepted_binops = frozenset({"*", "+", "-", "**", "%"})

    def __init__(self, limits: RenderLimits) -> None:
        self.limits = limits
        super().__init__(
            undefined=StrictUndefined,
            autoescape=False,
            keep_trailing_newline=True,
            finalize=self._finalize,
        )
        self.filters = guard_filters(dict(self.filters))
        self.filters[STEPS_FILTER] = _steps_filter
        self.filters[CONCAT_FILTER] = _concat_filter
        self.filters[VALUE_FILTER] = _value_filter
        self.globals["range"] = self._range
        self.globals["lipsum"] = self._lipsum

    def rewrite(self, tree: nodes.Template) -> nodes.Template:
        """``tree`` with its loops counted and its literals and ``~`` checked."""
        rewritten = _Rewriter(self).visit(tree)
        assert isinstance(rewritten, nodes.Template)
        return rewritten

    def _finalize(self, value: Any) -> Any:
        check_weight(value, self.limits, "an output value")
        return value

    def concat(self, parts: Iterable[str]) -> str:
        """Join a block's or macro's buffer, refusing one that is too large."""
        listed = list(parts)
        check_size(sum(len(part) for part in listed), self.limits, "a block or macro output")
        return "".join(listed)

    def _range(self, *args: int) -> range:
        numbers = range(*args)
        try:
            size = len(numbers)
        except OverflowError:
            size = self.limits.max_range + 1
        if size > self.limits.max_range:
            raise TemplateLimitError(
                f"range() of more than {self.limits.max_range:,} numbers is not allowed "
                "in a map template"
            )
        return numbers

    def _lipsum(self, n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:
        if not (is_int(n) and is_int(max)) or n > 100 or max > 1000:
            raise TemplateLimitError("lipsum() is limited to n <= 100 and max <= 1000")
        return str(generate_lorem_ipsum(n=n, html=html, min=min, max=max))

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        """Jinja2's sandboxed ``str.format``/``format_map``, checked before it runs."""
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        fmt: str = value.__self__
        limits = self.limits

        def checked(*args: Any, **kwargs: Any) -> str:
            check_format(fmt, args, kwargs, limits)
            return wrapped(*args, **kwargs)

        return checked

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        """Run an intercepted operator, checked before and after."""
        step()
        check_binop(operator, left, right, self.limits)
        result = super().call_binop(context, operator, left, right)
        check_int(result, self.limits)
        check_weight(result, self.limits, f"the result of {operator!r}")
        return result

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        """Run a call made by the template, checked before and after."""
        step()
        limits = __self.limits
        owner = getattr(__obj, "__self__", None)
        if isinstance(__obj, BuiltinMethodType):
            if isinstance(owner, str | bytes | bytearray):
                args = check_text_method(owner, __obj.__name__, args, kwargs, limits)
            elif is_int(owner) and __obj.__name__ == "to_bytes":
                length = args[0] if args else kwargs.get("length", 1)
                if is_int(length):
                    check_size(length, limits, "the result of .to_bytes()")
        result = super().call(__context, __obj, *args, **kwargs)
        check_int(result, limits)
        check_weight(result, limits, "the result of a call")
        return result


@pass_context
def _steps_filter(context: Context, value: Any) -> _Counted:
    return _Counted(value, current_budget())


@pass_context
def _concat_filter(context: Context, values: list[Any]) -> str:
    limits = context_limits(context)
    texts = []
    total = 0
    for value in values:
        check_weight(value, limits, "a '~' operand")
        text = str(value)
        total += len(text)
        check_size(total, limits, "a '~' result")
        texts.append(text)
    return "".join(texts)


@pass_context
def _value_filter(context: Context, value: Any) -> Any:
    check_weight(value, context_limits(context), "a literal")
    return value
