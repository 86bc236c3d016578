"""Configuration: one object, from defaults, then the environment, then code.

``MnesisConfig()`` gives the documented defaults; ``MnesisConfig.from_env()``
applies the ``LCM_*`` (and ``MNESIS_*``) variables on top. Any invalid value
raises :class:`~mnesis.errors.MnesisConfigError` naming the key and the value.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
)

from mnesis.errors import MnesisConfigError

__all__ = [
    "DEFAULT_DB_PATH",
    "CompactionConfig",
    "FileConfig",
    "MnesisConfig",
    "OperatorConfig",
    "RetrievalConfig",
    "SessionConfig",
    "StoreConfig",
]
__all__ += ["RetryConfig"]  # 0.4.0's retry settings (issue 31)

DEFAULT_DB_PATH = str(Path("~/.mnesis/sessions.db").expanduser())


def _raise_config_error(exc: ValidationError, prefix: str) -> None:
    err = exc.errors()[0]
    inner = err.get("ctx", {}).get("error")
    if isinstance(inner, MnesisConfigError):
        raise MnesisConfigError(inner.key, inner.value, inner.reason) from None
    key = ".".join(str(p) for p in (prefix, *err["loc"]) if p != "")
    raise MnesisConfigError(key or prefix, err.get("input"), err["msg"]) from None


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=False)
    _section: str = ""

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            _raise_config_error(exc, self._section_name())

    @classmethod
    def _section_name(cls) -> str:
        names = {
            "CompactionConfig": "compaction",
            "FileConfig": "file",
            "StoreConfig": "store",
            "OperatorConfig": "operators",
            "SessionConfig": "session",
            "RetrievalConfig": "retrieval",
            "RetryConfig": "session.retry",
        }
        return names.get(cls.__name__, "")

    def __setattr__(self, name: str, value: Any) -> None:
        try:
            super().__setattr__(name, value)
        except ValidationError as exc:
            _raise_config_error(exc, self._section_name())


class CompactionConfig(_Config):
    """How and when the context is compacted."""

    auto: bool = True
    compaction_output_budget: int = Field(default=20_000, ge=0)
    prune: bool = True
    prune_protect_tokens: int = Field(default=40_000, ge=0)
    prune_minimum_tokens: int = Field(default=20_000, ge=0)
    protected_tools: list[str] = Field(default_factory=lambda: ["skill"])
    compaction_model: str | None = None
    """Model used for summaries; ``None`` uses the session's model, ``"extractive"``
    the offline extractive summariser."""
    compaction_context_limit: int | None = Field(default=None, ge=1_024)
    """The compaction model's window (tokens). ``None``: the session's window (with
    ``model_overrides``) when the compaction model is the session's model, else the
    model table's. Every summariser prompt, instructions and answer included, fits it."""
    level2_enabled: bool = True
    compaction_prompt: str | None = None
    """Level 1 prompt override (``{target_tokens}`` is filled in)."""
    level2_prompt: str | None = None
    """Level 2 prompt override."""
    condense_prompt: str | None = None
    """Condensation level 1 prompt override."""
    condense_level2_prompt: str | None = None
    """Condensation level 2 prompt override."""
    soft_threshold_fraction: float = Field(default=0.6, gt=0.0, le=1.0)
    max_compaction_rounds: int = Field(default=10, ge=1, le=1000)
    condensation_enabled: bool = True
    fresh_tail_count: int = Field(default=8, ge=0)
    leaf_target_tokens: int = Field(default=600, ge=64)
    condensed_target_tokens: int = Field(default=900, ge=64)
    file_ids_footer_cap: int = Field(default=40, ge=1)
    model_timeout_seconds: float = Field(default=120.0, gt=0)
    failure_cooldown_seconds: float = Field(default=300.0, ge=0)
    max_consecutive_model_failures: int = Field(default=3, ge=1)
    min_seconds_between_compactions: float = Field(default=0.0, ge=0)
    mode: Literal["inline", "worker"] = "inline"
    """``"inline"``: the session compacts in its own process (a background task after
    the soft threshold). ``"worker"``: the soft threshold queues a job for ``mnesis
    worker`` instead (PostgreSQL stores only; see docs/postgres.md, "Workers")."""
    worker_pickup_seconds: float = Field(default=30.0, ge=0)
    """Worker mode: how long a turn over the hard threshold waits for a worker to take
    the queued job before compacting inline (a taken job is waited for)."""
    condense_skip_level1: bool = False
    """Condensation starts at Level 2 (terse) instead of Level 1 (structured)."""

    def validate_prune_thresholds(self) -> CompactionConfig:
        """0.4.0's check of the pruning thresholds, kept callable: both are validated
        (``>= 0``) whenever they are set, so this only returns ``self``."""
        return self


class FileConfig(_Config):
    """Large-file handling."""

    inline_threshold: int = Field(default=10_000, ge=1)
    storage_dir: str | None = None
    exploration_summary_model: str | None = None
    """Reserved (seed 001): a model for LLM-written exploration summaries. Accepted and
    kept, but not used yet: exploration summaries are always the structural ones."""
    allowed_roots: list[str] | None = None
    """Directories ``handle_file`` and ``read`` may reach; ``None``: any path. Paths are
    resolved (symlinks included) before the check, so a link pointing outside every
    root is refused with ``OutOfScopeError``."""
    read_timeout: float | None = Field(default=300.0, gt=0)
    """Seconds one blocking step on a file (hashing, exploring, reading back) may take
    before ``FileAccessError``; ``None``: no limit."""

    @field_validator("allowed_roots", mode="before")
    @classmethod
    def _check_roots(cls, value: object) -> object:
        """Each root a non-empty path without NUL bytes (``os.PathLike`` accepted)."""
        if value is None or not isinstance(value, list | tuple):
            return value
        roots = [os.fspath(v) if isinstance(v, os.PathLike) else v for v in value]
        for root in roots:
            if isinstance(root, str) and (not root.strip() or "\x00" in root):
                raise ValueError("allowed_roots holds non-empty paths without NUL bytes")
        return roots

    @classmethod
    def expand_storage_dir(cls, v: Any) -> str:
        """0.4.0's path normaliser: ``v`` as a string with a leading ``~`` expanded."""
        return str(os.path.expanduser(os.fspath(v)))


class StoreConfig(_Config):
    """Where and how sessions are stored."""

    db_path: str = DEFAULT_DB_PATH
    database_url: str | None = None
    """``postgresql://...`` selects the PostgreSQL backend (extra ``postgres``)."""
    wal_mode: bool = True
    connection_timeout: float = Field(default=30.0, gt=0)
    synchronous: Literal["OFF", "NORMAL", "FULL", "EXTRA"] = "NORMAL"

    @field_validator("db_path", mode="before")
    @classmethod
    def _check_path(cls, value: object) -> object:
        """Accept a ``str`` or ``os.PathLike``; expand a leading ``~``."""
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        if not isinstance(value, str):
            return value
        if not value.strip() or "\x00" in value:
            raise ValueError("db_path must be a non-empty path without NUL bytes")
        return os.path.expanduser(value) if value.startswith("~") else value

    @classmethod
    def expand_db_path(cls, v: Any) -> str:
        """0.4.0's path normaliser: ``v`` as a string with a leading ``~`` expanded."""
        return str(os.path.expanduser(os.fspath(v)))


class OperatorConfig(_Config):
    """Concurrency and retries of LLMMap / AgenticMap."""

    llm_map_concurrency: int = Field(default=16, ge=1, le=1024)
    agentic_map_concurrency: int = Field(default=4, ge=1, le=256)
    max_retries: int = Field(default=3, ge=0, le=100)


class RetryConfig(_Config):
    """Retries of a session's model call after a transient error (0.4.0's settings; see
    :func:`mnesis.retry.call_with_retry`). ``max_retries=0``, the default, never retries."""

    max_retries: int = Field(default=0, ge=0, le=100)
    base_delay: float = Field(default=1.0, ge=0)
    """Seconds before the first retry; doubled at each further one."""
    max_delay: float = Field(default=60.0, ge=0)
    """The longest wait between two attempts."""
    jitter: bool = True
    """Wait a random fraction (50-100 %) of the delay, so clients do not retry in step."""


class SessionConfig(_Config):
    """Per-session behaviour."""

    doom_loop_threshold: int = Field(default=3, ge=2)
    model_timeout_seconds: float = Field(default=300.0, gt=0)
    max_tool_rounds: int = Field(default=8, ge=1)
    retry: RetryConfig = Field(default_factory=RetryConfig)
    """Retries of a model call after a transient provider error (0.4.0's ``retry``)."""


class RetrievalConfig(_Config):
    """Limits of describe / grep / expand."""

    max_expand_tokens: int = Field(default=4_000, ge=1)
    grep_default_limit: int = Field(default=20, ge=1)
    grep_max_limit: int = Field(default=500, ge=1)
    regex_timeout_seconds: float = Field(default=2.0, gt=0)
    semantic: bool = False
    """Fuse dense (embedding) recall into full-text ``grep`` (reciprocal rank fusion).
    Needs the ``semantic`` extra (``MissingDependencyError`` at the first grep without it)."""
    semantic_index_seconds: float = Field(default=1.0, ge=0)
    """How long a ``grep`` may spend embedding texts that have no vector yet, before it
    searches (the rest waits for the next grep or ``RetrievalEngine.index_semantic``)."""


class MnesisConfig(_Config):
    """All of mnesis' configuration."""

    compaction: CompactionConfig = Field(default_factory=CompactionConfig)
    file: FileConfig = Field(default_factory=FileConfig)
    store: StoreConfig = Field(default_factory=StoreConfig)
    operators: OperatorConfig = Field(default_factory=OperatorConfig)
    session: SessionConfig = Field(default_factory=SessionConfig)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    model_overrides: dict[str, int] | None = None
    """Keys ``context_limit`` and ``max_output_tokens`` override the model table."""

    @field_validator("model_overrides")
    @classmethod
    def _check_overrides(cls, value: dict[str, int] | None) -> dict[str, int] | None:
        if value:
            allowed = {"context_limit", "max_output_tokens"}
            for key, number in value.items():
                if key not in allowed:
                    raise ValueError(f"unknown key {key!r}; allowed: {sorted(allowed)}")
                if number < (1 if key == "context_limit" else 0):
                    raise ValueError(f"{key} must be positive, got {number}")
        return value

    def with_window(
        self, context_limit: int | None = None, max_output_tokens: int | None = None
    ) -> MnesisConfig:
        """A copy whose ``model_overrides`` state the model's window (the way to give a
        local model's real window); ``None`` keeps what is there. Compaction settings the
        copy leaves unset scale with that window."""
        window = {"context_limit": context_limit, "max_output_tokens": max_output_tokens}
        given = {key: value for key, value in window.items() if value is not None}
        for key, value in given.items():
            if isinstance(value, bool) or not isinstance(value, int):
                raise MnesisConfigError(f"model_overrides.{key}", value, "expected an integer")
        copy = self.model_copy(deep=True)
        if given:
            copy.model_overrides = {**(self.model_overrides or {}), **given}
        return copy

    def stored_form(self) -> dict[str, Any]:
        """The JSON a session row keeps: the settings that were given, not the defaults
        (so a reopened session still derives the unset ones from its window)."""
        return self.model_dump(mode="json", exclude={"store"}, exclude_unset=True)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> MnesisConfig:
        """Build a config from defaults, then ``LCM_*``/``MNESIS_*`` variables, then kwargs.

        Variables: ``LCM_ENABLED``, ``LCM_AUTOCOMPACT_DISABLED``, ``LCM_CONTEXT_THRESHOLD``,
        ``LCM_FRESH_TAIL_COUNT``, ``LCM_LEAF_TARGET_TOKENS``, ``LCM_CONDENSED_TARGET_TOKENS``,
        ``LCM_MAX_EXPAND_TOKENS``, ``LCM_DATABASE_URL``, ``MNESIS_DB_PATH``.
        """
        env = os.environ if environ is None else environ
        data: dict[str, dict[str, Any]] = {
            "compaction": {},
            "store": {},
            "retrieval": {},
        }
        for var, (section, key, kind) in _ENV_MAP.items():
            raw = env.get(var)
            if raw is None or raw == "":
                continue
            value = _parse_env(var, raw, kind)
            if var == "LCM_ENABLED":
                if not value:
                    data["compaction"]["auto"] = False
                    data["compaction"]["prune"] = False
                continue
            if var == "LCM_AUTOCOMPACT_DISABLED":
                if value:
                    data["compaction"]["auto"] = False
                continue
            if var == "LCM_DATABASE_URL":
                _store_url_from_env(str(value), data["store"])
                continue
            data[section][key] = value
        kwargs: dict[str, Any] = {k: v for k, v in data.items() if v}
        kwargs.update(overrides)
        try:
            return cls(**kwargs)
        except MnesisConfigError as exc:
            for var, (section, key, _kind) in _ENV_MAP.items():
                if exc.key == f"{section}.{key}" and env.get(var):
                    raise MnesisConfigError(
                        f"{var} ({exc.key})", env.get(var), exc.reason
                    ) from None
            raise


def _store_url_from_env(url: str, store: dict[str, Any]) -> None:
    """``LCM_DATABASE_URL``: a ``postgresql://`` URL goes to ``database_url``, a
    ``sqlite:///path`` URL or a plain path to ``db_path``; any other scheme (``mysql://``,
    the typo ``sqlite:/x``) is a :class:`MnesisConfigError` naming the variable."""
    head, colon, _ = url.partition(":")
    scheme_chars = all(c.isalnum() or c in "+.-" for c in head)
    if not (colon and len(head) >= 2 and head[0].isalpha() and scheme_chars):
        store["db_path"] = url
        return
    name = head.lower()
    if name in ("postgres", "postgresql") and url[len(name) + 1 :].startswith("//"):
        store["database_url"] = url
        return
    if url.lower().startswith("sqlite:///") and len(url) > len("sqlite:///"):
        store["db_path"] = url[len("sqlite:///") :]
        return
    raise MnesisConfigError(
        "LCM_DATABASE_URL",
        url,
        f"unsupported store location (scheme {name!r}); use a file path, "
        "sqlite:///path or postgresql://user@host/database",
    )


_ENV_MAP: dict[str, tuple[str, str, str]] = {
    "LCM_ENABLED": ("compaction", "auto", "bool"),
    "LCM_AUTOCOMPACT_DISABLED": ("compaction", "auto", "bool"),
    "LCM_CONTEXT_THRESHOLD": ("compaction", "soft_threshold_fraction", "float"),
    "LCM_FRESH_TAIL_COUNT": ("compaction", "fresh_tail_count", "int"),
    "LCM_LEAF_TARGET_TOKENS": ("compaction", "leaf_target_tokens", "int"),
    "LCM_CONDENSED_TARGET_TOKENS": ("compaction", "condensed_target_tokens", "int"),
    "LCM_MAX_EXPAND_TOKENS": ("retrieval", "max_expand_tokens", "int"),
    "LCM_DATABASE_URL": ("store", "database_url", "str"),
    "MNESIS_DB_PATH": ("store", "db_path", "str"),
}


def _parse_env(var: str, raw: str, kind: str) -> Any:
    if kind == "bool":
        lowered = raw.strip().lower()
        if lowered in {"1", "true", "yes", "on"}:
            return True
        if lowered in {"0", "false", "no", "off"}:
            return False
        raise MnesisConfigError(var, raw, "expected a boolean (true/false/1/0)")
    if kind == "int":
        try:
            return int(raw)
        except ValueError:
            raise MnesisConfigError(var, raw, "expected an integer") from None
    if kind == "float":
        try:
            return float(raw)
        except ValueError:
            raise MnesisConfigError(var, raw, "expected a number") from None
    return raw
