"""How :class:`~mnesis.operators.LLMMap` checks a reply against its ``output_schema``.

The schema is a pydantic model (the output is an instance of it), a JSON-schema
dict (checked with the ``jsonschema`` library; the output is the parsed JSON) or
``None`` (the output is the reply text, which must not be blank). A dict is
checked against its meta-schema once, when the run is planned. Every reply
that does not fit raises :class:`InvalidOutput` whose message names each problem
with its JSON path: that message is what the model is shown on a retry.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

import jsonschema
from jsonschema.exceptions import SchemaError
from jsonschema.protocols import Validator
from pydantic import BaseModel, ValidationError

from mnesis.errors import InvalidArgumentError, LLMResponseError

__all__ = ["InvalidOutput", "OutputSpec"]

_FENCE = re.compile(r"```[ \t]*(?:json)?[ \t]*\r?\n(.*?)```", re.DOTALL | re.IGNORECASE)
_SHOWN_PROBLEMS = 5


class InvalidOutput(LLMResponseError, ValueError):
    """A reply that does not satisfy the output schema (handled by the retry loop)."""


def json_text(text: str) -> str:
    """The JSON part of a reply: the first fenced block if there is one, else all of it."""
    stripped = text.strip()
    match = _FENCE.search(stripped)
    return match.group(1).strip() if match else stripped


class OutputSpec:
    """The checker of one run's replies, with the instruction that tells the model
    the schema (``None`` without a schema).

    Raises :class:`~mnesis.errors.InvalidArgumentError` for a schema that is neither
    a pydantic model class, a dict nor ``None``, for a dict that is not a valid JSON
    schema, or for one that is not JSON-serialisable.
    """

    def __init__(self, schema: object) -> None:
        self.model: type[BaseModel] | None = None
        self.instruction: str | None = None
        self._validator: Validator | None = None
        if schema is None:
            return
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            self.model = schema
            described: Any = schema.model_json_schema()
        elif isinstance(schema, dict):
            self._validator = _validator(schema)
            described = schema
        else:
            raise InvalidArgumentError(
                "output_schema must be a pydantic BaseModel subclass, a JSON-schema dict "
                f"or None, got {schema!r}"
            )
        try:
            rendered = json.dumps(described, ensure_ascii=False, sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentError(f"output_schema is not JSON-serialisable: {exc}") from None
        self.instruction = (
            "Reply with only a JSON value (no prose) that matches this JSON schema:\n" + rendered
        )

    def parse(self, text: str) -> Any:
        """The validated output of ``text``; raises :class:`InvalidOutput`."""
        if self.model is not None:
            try:
                return self.model.model_validate_json(json_text(text))
            except ValidationError as exc:
                raise InvalidOutput(_pydantic_problems(exc)) from None
        if self._validator is not None:
            try:
                value = json.loads(json_text(text))
            except json.JSONDecodeError as exc:
                raise InvalidOutput(f"the reply is not valid JSON ({exc})") from None
            problems = [_describe(error) for error in self._validator.iter_errors(value)]
            if problems:
                raise InvalidOutput(_join(problems))
            return value
        if not text.strip():
            raise InvalidOutput("the reply was empty")
        return text


def _validator(schema: dict[str, Any]) -> Validator:
    """A validator of the draft ``schema`` declares (``$schema``; the latest otherwise)."""
    validator_class = jsonschema.validators.validator_for(schema)
    try:
        validator_class.check_schema(schema)
    except SchemaError as exc:
        raise InvalidArgumentError(
            f"output_schema is not a valid JSON schema: {exc.message}"
        ) from None
    return validator_class(schema)


def _describe(error: jsonschema.ValidationError) -> str:
    """``$.path: message``; for ``anyOf``/``oneOf``, also the first problem of each
    alternative, so the model sees what every option would have needed."""
    text = f"{_path(error.absolute_path)}: {error.message}"
    branches: dict[Any, jsonschema.ValidationError] = {}
    for sub in error.context or ():
        branch = sub.relative_schema_path[0] if sub.relative_schema_path else None
        branches.setdefault(branch, sub)
    if branches:
        described = "; ".join(
            f"option {branch + 1 if isinstance(branch, int) else branch}: "
            f"{_path(sub.absolute_path)}: {sub.message}"
            for branch, sub in branches.items()
        )
        text += f" ({described})"
    return text


def _path(parts: Iterable[Any]) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)


def _pydantic_problems(exc: ValidationError) -> str:
    problems = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "(root)"
        problems.append(f"{where}: {err['msg']}")
    return _join(problems)


def _join(problems: list[str]) -> str:
    shown = "; ".join(problems[:_SHOWN_PROBLEMS])
    hidden = len(problems) - _SHOWN_PROBLEMS
    return shown if hidden <= 0 else f"{shown} (+{hidden} more)"
