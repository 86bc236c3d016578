"""Prompt templates of the map operators: Jinja2, sandboxed and bounded, checked
before any work starts.

A template must reference ``{{ item }}`` (the input being mapped); ``{{ index }}``
(its position) is also available. The check runs on the template's syntax tree,
not on its text, so ``{{ item.title }}`` or ``{% for x in item %}`` count and a
comment mentioning ``{{ item }}`` does not.

Templates render in a :class:`~mnesis.operators.sandbox.BoundedEnvironment`
(an immutable Jinja2 sandbox with ``StrictUndefined``): an input cannot reach
Python internals through the template, a missing attribute is an error rather
than an empty string, and one render is bounded in steps, time, value sizes and
output length (:class:`~mnesis.operators.bounds.RenderLimits`).
:meth:`ItemTemplate.render_async` renders in a thread of its own, so the event
loop never waits on a template. Every failure of a render, whatever its cause,
is a :class:`~mnesis.operators.errors.TemplateRenderError`
(:class:`~mnesis.operators.errors.TemplateLimitError` for a bound).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

from jinja2 import TemplateError, meta

from mnesis.errors import InvalidArgumentError
from mnesis.operators.bounds import RenderBudget, RenderLimits, use_budget
from mnesis.operators.errors import TemplateLimitError, TemplateRenderError
from mnesis.operators.sandbox import BoundedEnvironment

__all__ = [
    "DEFAULT_LIMITS",
    "TEMPLATE_VARIABLES",
    "ItemTemplate",
    "TemplateError",
    "require_item_variable",
]

TEMPLATE_VARIABLES = frozenset({"item", "index"})
"""The variables a map template may use."""

DEFAULT_LIMITS = RenderLimits()
"""The bounds every map template renders within."""

_GRACE_SECONDS = 1.0
_ENV = BoundedEnvironment(DEFAULT_LIMITS)


def require_item_variable(template_str: object, *, what: str = "prompt_template") -> None:
    """Raise :class:`~mnesis.errors.InvalidArgumentError` unless ``template_str`` is a
    Jinja2 template that uses ``{{ item }}`` and no variable other than ``item`` and
    ``index``."""
    ItemTemplate(template_str, what=what)


class ItemTemplate:
    """A compiled, validated map template.

    Raises :class:`~mnesis.errors.InvalidArgumentError` (a ``ValueError``) when the
    source is not a string, does not parse, does not use ``item`` or uses a variable
    the operators do not provide. ``limits`` bound each render (default
    :data:`DEFAULT_LIMITS`).
    """

    def __init__(
        self, source: object, *, what: str = "prompt_template", limits: RenderLimits | None = None
    ) -> None:
        if not isinstance(source, str):
            raise InvalidArgumentError(f"{what} must be a string, got {type(source).__name__}")
        if not source.strip():
            raise InvalidArgumentError(f"{what} is empty; it must reference {{{{ item }}}}")
        env = _ENV if limits is None or limits == DEFAULT_LIMITS else BoundedEnvironment(limits)
        try:
            tree = env.parse(source)
        except TemplateError as exc:
            raise InvalidArgumentError(f"{what} is not a valid Jinja2 template: {exc}") from None
        used = meta.find_undeclared_variables(tree) - set(env.globals)
        if "item" not in used:
            raise InvalidArgumentError(
                f"{what} never uses {{{{ item }}}}, so every input would get the same "
                f"prompt; reference the input, e.g. 'Summarise: {{{{ item }}}}'"
            )
        unknown = sorted(used - TEMPLATE_VARIABLES)
        if unknown:
            raise InvalidArgumentError(
                f"{what} uses undefined variable(s) {unknown}; only "
                f"{sorted(TEMPLATE_VARIABLES)} are available"
            )
        try:
            template = env.from_string(env.rewrite(tree))
        except TemplateError as exc:
            raise InvalidArgumentError(f"{what} is not a valid Jinja2 template: {exc}") from None
        self.source = source
        self.limits = env.limits
        self._template = template

    def render(self, item: Any, index: int, budget: RenderBudget | None = None) -> str:
        """Render for one input, in the calling thread, within the limits.

        Raises :class:`~mnesis.operators.errors.TemplateRenderError` for any failure
        (an undefined attribute, a sandbox violation, ``ZeroDivisionError``, …) and
        its subclass :class:`~mnesis.operators.errors.TemplateLimitError` when the
        render goes over a bound.
        """
        budget = budget if budget is not None else RenderBudget(self.limits)
        budget.restart()
        limit = self.limits.max_output_chars
        try:
            with use_budget(budget):
                parts: list[str] = []
                size = 0
                for part in self._template.generate(item=item, index=index):
                    size += len(part)
                    if size > limit:
                        raise TemplateLimitError(
                            f"the rendered prompt would be over {limit:,} characters"
                        )
                    parts.append(part)
                return "".join(parts)
        except TemplateRenderError:
            raise
        except RecursionError:
            raise TemplateRenderError(
                "the template could not render this input: it nests too deeply "
                "(recursive macro or loop)"
            ) from None
        except Exception as exc:
            raise TemplateRenderError(
                f"the template could not render this input: {type(exc).__name__}: {exc}"
            ) from exc

    async def render_async(self, item: Any, index: int) -> str:
        """:meth:`render` in a thread of its own, so the event loop keeps running.

        The render's own bounds end it; if it is still running a second after its
        time limit (or the caller is cancelled), it is abandoned: it stops at its
        next step and its result is dropped.
        """
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[str] = loop.create_future()
        budget = RenderBudget(self.limits)

        def deliver(result: str | None, error: BaseException | None) -> None:
            if waiter.done():
                return
            if error is not None:
                waiter.set_exception(error)
            else:
                waiter.set_result(result or "")

        def work() -> None:
            try:
                outcome: tuple[str | None, BaseException | None] = (
                    self.render(item, index, budget),
                    None,
                )
            except BaseException as exc:  # handed to the waiting task, not lost
                outcome = (None, exc)
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(deliver, *outcome)

        threading.Thread(target=work, name="mnesis-render", daemon=True).start()
        try:
            # Not asyncio.wait_for: on Python 3.11 it can swallow a cancellation
            # that arrives as the render completes, and the item would run on.
            async with asyncio.timeout(self.limits.max_seconds + _GRACE_SECONDS):
                return await waiter
        except TimeoutError:
            raise TemplateLimitError(
                f"rendering took longer than {self.limits.max_seconds:g} s; "
                "make the template do less work per input"
            ) from None
        finally:
            budget.abandoned = True
