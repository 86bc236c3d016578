"""Hand-built public models raise ``InvalidArgumentError`` (also a ``ValueError``).

Issue 34: ``TokenUsage(input=2**63)`` and ``ToolStatus(started_at=2**70)`` raised
pydantic's ``ValidationError``, not a ``mnesis.errors`` type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mnesis.errors import InvalidArgumentError, MnesisError
from mnesis.models.parts import TextPart, ToolPart, ToolStatus
from mnesis.models.tokens import TokenUsage

BAD: list[tuple[Callable[..., Any], dict[str, Any], str]] = [
    (TokenUsage, {"input": 2**63}, "input"),
    (TokenUsage, {"output": -1}, "output"),
    (ToolStatus, {"started_at": 2**70}, "started_at"),
    (ToolStatus, {"state": "exploded"}, "state"),
    (TextPart, {"text": 3}, "text"),
    (ToolPart, {"tool_name": "t", "tool_call_id": "c", "status": {"started_at": 2**70}}, "status"),
]


@pytest.mark.parametrize(("model", "values", "field"), BAD)
def test_a_bad_value_is_a_typed_error_naming_the_field(
    model: Callable[..., Any], values: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=field) as caught:
        model(**values)
    assert isinstance(caught.value, MnesisError)
    assert isinstance(caught.value, ValueError)


def test_good_values_and_stored_data_still_validate() -> None:
    assert TokenUsage(input=2**63 - 1).input == 2**63 - 1
    assert ToolStatus.model_validate({"started_at": 5}).started_at == 5
