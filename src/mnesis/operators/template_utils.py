"""The documented module path ``mnesis.operators.template_utils``: a re-export of
:func:`~mnesis.operators.template.require_item_variable` (the check lives in
:mod:`mnesis.operators.template`). It raises
:class:`~mnesis.errors.InvalidArgumentError`, a :class:`ValueError`."""

from mnesis.operators.template import require_item_variable

__all__ = ["require_item_variable"]
