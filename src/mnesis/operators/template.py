"""Prompt templates of the map operators: Jinja2, sandboxed, checked before any work starts.

A template must reference ``{{ item }}`` (the input being mapped); ``{{ index }}``
(its position) is also available. The check runs on the template's syntax tree,
not on its text, so ``{{ item.title }}`` or ``{% for x in item %}`` count and a
comment mentioning ``{{ item }}`` does not. Templates render in a
:class:`~jinja2.sandbox.SandboxedEnvironment` with ``StrictUndefined``: an input
cannot reach Python internals through the template, and a missing attribute is
an error rather than an empty string.
"""

from __future__ import annotations

from typing import Any

from jinja2 import StrictUndefined, TemplateError, meta
from jinja2.sandbox import SandboxedEnvironment

from mnesis.errors import InvalidArgumentError

__all__ = ["TEMPLATE_VARIABLES", "ItemTemplate", "TemplateError", "require_item_variable"]

TEMPLATE_VARIABLES = frozenset({"item", "index"})
"""The variables a map template may use."""

_ENV = SandboxedEnvironment(
    undefined=StrictUndefined,
    autoescape=False,
    keep_trailing_newline=True,
)


def require_item_variable(source: object, *, what: str = "prompt_template") -> None:
    """Raise :class:`~mnesis.errors.InvalidArgumentError` unless ``source`` is a Jinja2
    template that uses ``{{ item }}`` and no variable other than ``item`` and ``index``."""
    ItemTemplate(source, what=what)


class ItemTemplate:
    """A compiled, validated map template.

    Raises :class:`~mnesis.errors.InvalidArgumentError` (a ``ValueError``) when the
    source is not a string, does not parse, does not use ``item`` or uses a variable
    the operators do not provide.
    """

    def __init__(self, source: object, *, what: str = "prompt_template") -> None:
        if not isinstance(source, str):
            raise InvalidArgumentError(f"{what} must be a string, got {type(source).__name__}")
        if not source.strip():
            raise InvalidArgumentError(f"{what} is empty; it must reference {{{{ item }}}}")
        try:
            tree = _ENV.parse(source)
        except TemplateError as exc:
            raise InvalidArgumentError(f"{what} is not a valid Jinja2 template: {exc}") from None
        used = meta.find_undeclared_variables(tree) - set(_ENV.globals)
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
        self.source = source
        self._template = _ENV.from_string(tree)

    def render(self, item: Any, index: int) -> str:
        """Render for one input; raises :class:`jinja2.TemplateError` (for example a
        ``SecurityError`` or an undefined attribute of ``item``)."""
        return self._template.render(item=item, index=index)
