"""Validation of what callers hand a session: message content, names, prompts, IDs and
configuration.

Every check raises :class:`~mnesis.errors.InvalidArgumentError` naming the argument,
before anything is stored.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pydantic import ValidationError

from mnesis.config import DEFAULT_DB_PATH, MnesisConfig
from mnesis.errors import InvalidArgumentError
from mnesis.models.ids import is_valid_id
from mnesis.models.limits import MAX_JSON_DEPTH, json_depth_exceeds
from mnesis.models.parts import PART_TYPES, MessagePart, TextPart, ToolPart, part_adapter
from mnesis.models.tokens import TokenUsage

__all__ = [
    "check_encodable",
    "check_json",
    "check_new_session",
    "check_session_id",
    "check_tokens",
    "normalize_parts",
    "resolve_config",
]


def normalize_parts(content: object, what: str) -> list[MessagePart]:
    """Validate user-supplied content into fresh parts (copies, without IDs)."""
    if isinstance(content, str):
        if not content.strip():
            raise InvalidArgumentError(f"{what} is empty")
        return [TextPart(text=content)]
    if isinstance(content, Sequence) and not isinstance(content, bytes | bytearray):
        parts: list[MessagePart] = []
        for index, item in enumerate(content):
            _check_depth(item, f"{what}[{index}]")
            try:
                if isinstance(item, PART_TYPES):
                    part = part_adapter.validate_python(item.model_dump(warnings=False))
                elif isinstance(item, dict):
                    part = part_adapter.validate_python(item)
                else:
                    raise InvalidArgumentError(
                        f"{what}[{index}] must be a message part, got {type(item).__name__}"
                    )
            except ValidationError as exc:
                raise InvalidArgumentError(
                    f"{what}[{index}] is not a valid message part: {exc.errors()[0]['msg']}"
                ) from None
            parts.append(part.model_copy(deep=True, update={"id": None}))
        if not parts:
            raise InvalidArgumentError(f"{what} is empty")
        for part in parts:
            if isinstance(part, ToolPart):
                check_encodable(part.tool_name, f"{what}: tool_name")
                check_encodable(part.tool_call_id, f"{what}: tool_call_id")
                check_json(part.input, f"{what}: input of tool call {part.tool_call_id!r}")
        return parts
    raise InvalidArgumentError(
        f"{what} must be a str or a list of message parts, got {type(content).__name__}"
    )


def _check_depth(item: object, what: str) -> None:
    """Reject a part whose tool input nests deeper than the store accepts (before any
    recursive copy or serialisation of it)."""
    if isinstance(item, ToolPart):
        value: object = item.input
    elif isinstance(item, dict):
        value = item.get("input")
    else:
        return
    if json_depth_exceeds(value):
        raise InvalidArgumentError(
            f"{what}: the tool input nests deeper than {MAX_JSON_DEPTH} levels"
        )


def check_tokens(tokens: object) -> TokenUsage | None:
    """``None`` or a :class:`TokenUsage` whose counters fit the store (re-validated, so
    an instance built with ``model_construct`` cannot smuggle in a bad value)."""
    if tokens is None:
        return None
    if not isinstance(tokens, TokenUsage):
        raise InvalidArgumentError(f"tokens must be a TokenUsage, got {type(tokens).__name__}")
    try:
        return TokenUsage.model_validate(tokens.model_dump())
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(loc) for loc in error["loc"])
        raise InvalidArgumentError(f"tokens.{field}: {error['msg']}") from None


def check_encodable(value: str, what: str) -> None:
    """Reject text that cannot be stored as UTF-8 (lone surrogates) in a plain column."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidArgumentError(
            f"{what} contains characters that are not valid Unicode text: {exc.reason} "
            f"at position {exc.start}"
        ) from None


def check_json(value: object, what: str) -> None:
    """Reject a value ``json.dumps`` cannot serialise (or only as ``NaN``/``Infinity``)."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"{what} is not JSON-serialisable: {exc}") from None


def check_new_session(
    model: object, agent: object, system_prompt: object, parent_id: object
) -> None:
    """The arguments of ``MnesisSession.create`` that describe the new session."""
    if not isinstance(model, str) or not model.strip():
        raise InvalidArgumentError(f"model must be a non-empty string, got {model!r}")
    if not isinstance(agent, str) or not agent:
        raise InvalidArgumentError(f"agent must be a non-empty string, got {agent!r}")
    if not isinstance(system_prompt, str):
        raise InvalidArgumentError("system_prompt must be a string")
    for name, value in (("model", model), ("agent", agent), ("system_prompt", system_prompt)):
        check_encodable(value, name)
    if parent_id is not None and not is_valid_id(parent_id, "sess"):
        raise InvalidArgumentError(f"parent_id {parent_id!r} is not a session ID")


def check_session_id(session_id: object) -> None:
    """A session ID as ``MnesisSession.load`` accepts it."""
    if not isinstance(session_id, str):
        raise InvalidArgumentError(f"session_id must be a string, got {type(session_id).__name__}")
    if not is_valid_id(session_id, "sess"):
        raise InvalidArgumentError(
            f"{session_id[:80]!r} is not a session ID (sess_ followed by 26 characters)"
        )


def resolve_config(config: MnesisConfig | None, db_path: str | None) -> MnesisConfig:
    """The configuration a session runs with: ``config``, else one from the environment."""
    if config is not None and not isinstance(config, MnesisConfig):
        raise InvalidArgumentError(f"config must be a MnesisConfig, got {type(config).__name__}")
    if db_path is not None:
        if not isinstance(db_path, str) or not db_path.strip() or "\x00" in db_path:
            raise InvalidArgumentError(f"db_path must be a non-empty path, got {db_path!r}")
        if config is not None and config.store.db_path != DEFAULT_DB_PATH:
            raise InvalidArgumentError(
                "give either db_path or config.store.db_path, not both "
                f"({db_path!r} vs {config.store.db_path!r})"
            )
    return config if config is not None else MnesisConfig.from_env()
