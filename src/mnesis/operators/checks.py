"""Argument checks shared by the map operators; each raises
:class:`~mnesis.errors.InvalidArgumentError` naming the bad argument."""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable

from mnesis.config import MnesisConfig, OperatorConfig
from mnesis.errors import InvalidArgumentError
from mnesis.events.bus import EventBus
from mnesis.operators.errors import UnknownOptionError

__all__ = [
    "check_event_bus",
    "check_model",
    "check_option_names",
    "int_at_least",
    "int_option",
    "operator_config",
    "run_model",
]


def operator_config(config: object) -> OperatorConfig:
    """The operator section of ``config`` (an ``OperatorConfig``, a ``MnesisConfig`` or
    ``None`` for the defaults)."""
    if config is None:
        return OperatorConfig()
    if isinstance(config, MnesisConfig):
        return config.operators
    if isinstance(config, OperatorConfig):
        return config
    raise InvalidArgumentError(
        f"config must be an OperatorConfig (or MnesisConfig), got {type(config).__name__}"
    )


def check_event_bus(event_bus: object) -> EventBus | None:
    """``event_bus`` if it is an :class:`EventBus` or ``None``."""
    if event_bus is not None and not isinstance(event_bus, EventBus):
        raise InvalidArgumentError(f"event_bus must be an EventBus, got {type(event_bus).__name__}")
    return event_bus


def int_at_least(value: object, minimum: int, name: str) -> int:
    """``value`` if it is an integer (not a bool) of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidArgumentError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def int_option(value: object, default: int, minimum: int, name: str) -> int:
    """The integer option ``name``: ``value``, or ``default`` when it is ``None``, checked
    as by :func:`int_at_least`."""
    return int_at_least(default if value is None else value, minimum, name)


def check_model(model: object) -> str:
    """``model`` if it is a non-empty string."""
    if not isinstance(model, str) or not model.strip():
        raise InvalidArgumentError(f"model must be a non-empty string, got {model!r}")
    return model


def run_model(given: object, default: str | None, operator: str) -> str:
    """The model of one run of ``operator``: ``given`` (checked) or else the ``default``
    given to its constructor; one of them must be there."""
    if given is not None:
        return check_model(given)
    if default is None:
        raise InvalidArgumentError(f"no model: pass model= to {operator}(...) or to run()")
    return default


def check_option_names(given: Iterable[str], known: Collection[str], call: str) -> None:
    """Raise :class:`~mnesis.operators.errors.UnknownOptionError` for the first name in
    ``given`` that is not in ``known`` (the options of ``call``, e.g. ``"LLMMap.run"``)."""
    for name in given:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UnknownOptionError(
                f"{call}() got an unexpected keyword argument {name!r}{hint} "
                f"(its options: {', '.join(sorted(known))})"
            )
