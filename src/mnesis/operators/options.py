"""The per-run options of :class:`~mnesis.operators.LLMMap`, declared once.

:class:`LLMMapOptions` is the keyword signature that
:meth:`~mnesis.operators.LLMMap.run`, ``run_all`` and ``run_jsonl`` share (each takes
``**options: Unpack[LLMMapOptions]``); :class:`MapOptions` holds the same settings as
one object, passed as ``options=MapOptions(...)``. :meth:`MapOptions.from_keywords`
turns the keywords of one call into one ``MapOptions``: a keyword that is given (not
``None``) wins over the same field of ``options``, and a keyword that is not an option
raises :class:`~mnesis.operators.UnknownOptionError`. Values are checked when the run
is planned, before any model call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, TypedDict

from pydantic import BaseModel

from mnesis.errors import InvalidArgumentError
from mnesis.operators.checks import check_option_names

__all__ = ["LLMMapOptions", "MapOptions"]


class LLMMapOptions(TypedDict, total=False):
    """The keyword options of one :class:`~mnesis.operators.LLMMap` run. A missing
    option, or one given as ``None``, takes the default named here. (``output_schema``
    is a parameter of its own, third after ``inputs`` and ``prompt_template``.)"""

    model: str | None
    """Overrides the model given to the constructor; one of them must be given."""
    system_prompt: str | None
    """Sent as the system message before every item (with the schema instruction)."""
    max_retries: int | None
    """Retries of an item after a model error or an invalid output; ``>= 0``, default
    ``config.max_retries``."""
    timeout: float | None
    """Seconds one model call may take; positive, default 120."""
    concurrency: int | None
    """Items in flight at once; ``>= 1``, default ``config.llm_map_concurrency``."""
    temperature: float | None
    """Sampling temperature, 0 to 2, sent to the model only when given (default: the
    model's own; reasoning models refuse any other than theirs)."""
    timeout_secs: float | None
    """0.4.0's name of ``timeout`` (``timeout`` wins when both are given)."""
    retry_guidance: str | None
    """The follow-up message after an output that failed validation (the error is
    appended); default: a built-in one naming the error."""
    options: MapOptions | None
    """The same settings as one :class:`MapOptions`; the keywords above win over it."""


@dataclass(frozen=True, slots=True)
class MapOptions:
    """The options of one :class:`~mnesis.operators.LLMMap` run as one object: each
    field is the option of that name in :class:`LLMMapOptions`, ``None`` meaning its
    default."""

    output_schema: type[BaseModel] | dict[str, Any] | None = None
    model: str | None = None
    system_prompt: str | None = None
    max_retries: int | None = None
    timeout: float | None = None
    concurrency: int | None = None
    temperature: float | None = None
    timeout_secs: float | None = None
    retry_guidance: str | None = None

    def overridden(self, given: MapOptions) -> MapOptions:
        """A copy in which every field of ``given`` that is not ``None`` replaces its own."""
        set_fields = {f.name: getattr(given, f.name) for f in fields(given)}
        return replace(self, **{k: v for k, v in set_fields.items() if v is not None})

    @staticmethod
    def of(options: object) -> MapOptions:
        """``options`` itself, or empty options for ``None``; raises
        :class:`~mnesis.errors.InvalidArgumentError` for anything else."""
        if options is None:
            return MapOptions()
        if not isinstance(options, MapOptions):
            raise InvalidArgumentError(
                f"options must be a MapOptions, got {type(options).__name__}"
            )
        return options

    @staticmethod
    def from_keywords(
        keywords: Mapping[str, Any],
        call: str = "LLMMap.run",
        output_schema: type[BaseModel] | dict[str, Any] | None = None,
    ) -> MapOptions:
        """The options of one call of ``call`` given ``keywords`` (see :class:`LLMMapOptions`)
        and ``output_schema``: ``keywords["options"]`` with every other keyword that is not
        ``None`` laid over it. Raises :class:`~mnesis.operators.UnknownOptionError` for a
        keyword that is no option."""
        check_option_names(keywords, LLMMapOptions.__optional_keys__, call)
        given = {k: v for k, v in keywords.items() if k != "options" and v is not None}
        if output_schema is not None:
            given["output_schema"] = output_schema
        return replace(MapOptions.of(keywords.get("options")), **given)
