"""``MapOptions``: the per-run options of :class:`~mnesis.operators.LLMMap` as one object.

:meth:`~mnesis.operators.LLMMap.run`, ``run_all`` and ``run_jsonl`` take the same
options either as keyword arguments or as ``options=MapOptions(...)``; a keyword
argument that is given (not ``None``) wins over the same field of ``options``.
A field left ``None`` means the operator's default. Values are checked when the
run is planned, not here.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from pydantic import BaseModel

from mnesis.errors import InvalidArgumentError

__all__ = ["MapOptions"]


@dataclass(frozen=True, slots=True)
class MapOptions:
    """Options of one :class:`~mnesis.operators.LLMMap` run.

    ``output_schema``: a pydantic model, a JSON-schema dict or ``None`` (plain text);
    ``model``: overrides the operator's model; ``system_prompt``: sent before every
    item; ``max_retries`` (default ``config.max_retries``), ``timeout`` per model
    call in seconds (default 120), ``concurrency`` (default
    ``config.llm_map_concurrency``).
    """

    output_schema: type[BaseModel] | dict[str, Any] | None = None
    model: str | None = None
    system_prompt: str | None = None
    max_retries: int | None = None
    timeout: float | None = None
    concurrency: int | None = None

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
