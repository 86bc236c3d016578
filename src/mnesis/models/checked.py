"""Public models whose constructors raise ``InvalidArgumentError`` on bad values.

A pydantic model raises ``pydantic.ValidationError`` when constructed with a value it
cannot take (``TokenUsage(input=2**63)``). Models a user builds by hand derive from
:class:`CheckedModel` instead, so bad input gets the library's typed error, which is
also a ``ValueError`` (as ``ValidationError`` is). Validating stored data
(``model_validate``) is unchanged.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from mnesis.errors import InvalidArgumentError

__all__ = ["CheckedModel"]


class CheckedModel(BaseModel):
    """A ``BaseModel`` whose constructor raises :class:`InvalidArgumentError`."""

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(at) for at in error['loc']) or 'value'}: {error['msg']}"
                for error in exc.errors(include_url=False)[:5]
            )
            raise InvalidArgumentError(f"invalid {type(self).__name__}: {problems}") from exc
