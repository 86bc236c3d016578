"""The typed errors of the map operators.

``TemplateRenderError`` and ``TemplateLimitError`` are never raised out of a run: an
item whose prompt cannot be rendered fails on its own, and its result carries the
error's message and class name (``error_type``). They are raised by
:meth:`ItemTemplate.render <mnesis.operators.template.ItemTemplate.render>` for
callers rendering directly. ``UnknownOptionError`` is raised by ``run`` itself,
before any model call or write, for a keyword the operator does not know.
"""

from __future__ import annotations

from mnesis.errors import InvalidArgumentError

__all__ = ["TemplateLimitError", "TemplateRenderError", "UnknownOptionError"]


class TemplateRenderError(InvalidArgumentError):
    """The template could not be rendered for one input: an undefined attribute,
    a sandbox violation, an arithmetic error such as a division by zero, …"""


class TemplateLimitError(TemplateRenderError):
    """Rendering one input went over a bound of the template sandbox (time, loop
    steps, output size or the size of a value built while rendering)."""


class UnknownOptionError(InvalidArgumentError, TypeError):
    """A run was given a keyword that is not one of its options. Also a ``TypeError``,
    as Python's own "unexpected keyword argument" is, so existing handlers still match."""
