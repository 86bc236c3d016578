"""The import's unvalidated model builders (:mod:`mnesis.importers.trusted`) give what
the validating constructors give, and hand anything else to them (same errors)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from mnesis.importers import trusted
from mnesis.models.limits import INT64_MAX
from mnesis.models.message import Message
from mnesis.models.parts import ReasoningPart, TextPart, ToolPart, ToolStatus


def _same(built: BaseModel, validated: BaseModel) -> None:
    assert type(built) is type(validated)
    assert built == validated
    assert list(built.__dict__.items()) == list(validated.__dict__.items())
    assert built.model_fields_set == validated.model_fields_set
    assert built.model_dump() == validated.model_dump()


@pytest.mark.parametrize("text", ["", "plain", "a\x00b \ud800 漢字"])
def test_text_and_reasoning_parts(text: str) -> None:
    _same(trusted.text_part(text), TextPart(text=text))
    _same(trusted.reasoning_part(text), ReasoningPart(text=text))


def test_a_tool_call_part() -> None:
    arguments: dict[str, Any] = {"command": "ls", "n": 2**70, "nested": [{"a": None}]}
    built = trusted.tool_call_part("Bash", "toolu_1", arguments, 5)
    validated = ToolPart(
        tool_name="Bash",
        tool_call_id="toolu_1",
        input=arguments,
        status=ToolStatus(state="running", started_at=5),
    )
    _same(built, validated)
    _same(built.status, validated.status)


@pytest.mark.parametrize("model_id", [None, "claude"])
@pytest.mark.parametrize("role", ["system", "user", "assistant", "tool"])
def test_a_message(role: Any, model_id: str | None) -> None:
    built = trusted.message("msg_1", "sess_1", role, -5, model_id, "stop")
    validated = Message(
        id="msg_1",
        session_id="sess_1",
        role=role,
        created_at=-5,
        model_id=model_id,
        finish_reason="stop",
    )
    _same(built, validated)


def _same_outcome(build: Callable[[], BaseModel], validate: Callable[[], BaseModel]) -> None:
    """Both give the same model, or both raise the same validation error."""
    try:
        expected = validate()
    except ValidationError as exc:
        with pytest.raises(ValidationError) as built:
            build()
        assert str(built.value) == str(exc)
    else:
        _same(build(), expected)


@pytest.mark.parametrize(
    ("name", "call_id", "arguments", "at"),
    [
        ("", "toolu_1", {}, 1),
        ("Bash", "", {}, 1),
        (None, "toolu_1", {}, 1),
        ("Bash", "toolu_1", {}, INT64_MAX + 1),
        ("Bash", "toolu_1", {}, True),
        ("Bash", "toolu_1", {1: "key not text"}, 1),
        ("Bash", "toolu_1", ["not", "a", "dict"], 1),
    ],
)
def test_odd_tool_call_values_go_through_validation(
    name: Any, call_id: Any, arguments: Any, at: Any
) -> None:
    _same_outcome(
        lambda: trusted.tool_call_part(name, call_id, arguments, at),
        lambda: ToolPart(
            tool_name=name,
            tool_call_id=call_id,
            input=arguments,
            status=ToolStatus(state="running", started_at=at),
        ),
    )


@pytest.mark.parametrize(
    "values",
    [
        ("msg_1", "sess_1", "robot", 1, None, None),
        ("msg_1", "sess_1", "user", INT64_MAX + 1, None, None),
        ("msg_1", "sess_1", "user", 1.0, None, None),
        ("msg_1", "sess_1", "user", 1.5, None, None),
        ("msg_1", "sess_1", "user", True, None, None),
        ("msg_1", "sess_1", "user", 1, 7, None),
        ("msg_1", "sess_1", ["user"], 1, None, None),
        ("msg_1", 5, "user", 1, None, None),
    ],
)
def test_odd_message_values_go_through_validation(values: tuple[Any, ...]) -> None:
    names = ("id", "session_id", "role", "created_at", "model_id", "finish_reason")
    _same_outcome(
        lambda: trusted.message(*values),
        lambda: Message(**dict(zip(names, values, strict=True))),
    )


@pytest.mark.parametrize("text", [None, 3, b"bytes"])
def test_odd_text_goes_through_validation(text: Any) -> None:
    _same_outcome(lambda: trusted.text_part(text), lambda: TextPart(text=text))
    _same_outcome(lambda: trusted.reasoning_part(text), lambda: ReasoningPart(text=text))
