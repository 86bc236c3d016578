"""The typed errors a map operator reports for one item.

Neither is raised out of a run: an item whose prompt cannot be rendered fails on
its own, and its result carries the error's message and class name
(``error_type``). They are raised by :meth:`ItemTemplate.render
<mnesis.operators.template.ItemTemplate.render>` for callers rendering directly.
"""

from __future__ import annotations

from mnesis.errors import InvalidArgumentError

__all__ = ["TemplateLimitError", "TemplateRenderError"]


class TemplateRenderError(InvalidArgumentError):
    """The template could not be rendered for one input: an undefined attribute,
    a sandbox violation, an arithmetic error such as a division by zero, …"""


class TemplateLimitError(TemplateRenderError):
    """Rendering one input went over a bound of the template sandbox (time, loop
    steps, output size or the size of a value built while rendering)."""
