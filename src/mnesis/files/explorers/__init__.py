"""Structural exploration: a short plain-text outline of a file, chosen by its type.

Each explorer is a function ``(path, byte_size) -> str`` that reads the file in
bounded memory and returns at most about 6,000 characters. :func:`explore` picks
the explorer for a file type and guarantees its contract: content never makes it
raise. Malformed content (invalid JSON, a syntax error, binary data named
``.py``) gives a summary that says it could not be parsed, followed by the
fallback (line count and first lines, or a hex preview of binary data). Only an
``OSError`` (the file vanished or cannot be read) propagates.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

from mnesis.files.explorers._common import ExplorationError
from mnesis.files.explorers._format import clip
from mnesis.files.explorers.code import (
    explore_javascript,
    explore_python,
    explore_sql,
    explore_typescript,
)
from mnesis.files.explorers.data import explore_json, explore_jsonl, explore_toml, explore_yaml
from mnesis.files.explorers.tabular import explore_csv, explore_sqlite, explore_tsv
from mnesis.files.explorers.text import explore_markdown, fallback_summary

__all__ = [
    "EXPLORERS",
    "TYPE_NAMES",
    "ExplorationError",
    "Explorer",
    "explore",
    "fallback_summary",
]

logger = logging.getLogger("mnesis.files")

Explorer = Callable[[Path, int], str]
"""``(path, byte_size) -> summary``; raises :class:`ExplorationError` for bad content."""

EXPLORERS: dict[str, Explorer] = {
    "python": explore_python,
    "json": explore_json,
    "jsonl": explore_jsonl,
    "yaml": explore_yaml,
    "toml": explore_toml,
    "markdown": explore_markdown,
    "csv": explore_csv,
    "tsv": explore_tsv,
    "typescript": explore_typescript,
    "javascript": explore_javascript,
    "sql": explore_sql,
    "sqlite": explore_sqlite,
}
"""File type -> explorer. Types not listed get :func:`fallback_summary`."""

TYPE_NAMES = {
    "python": "Python",
    "json": "JSON",
    "jsonl": "JSON Lines",
    "yaml": "YAML",
    "toml": "TOML",
    "markdown": "Markdown",
    "csv": "CSV",
    "tsv": "TSV",
    "typescript": "TypeScript",
    "javascript": "JavaScript",
    "sql": "SQL",
    "sqlite": "a SQLite database",
}

_BINARY_TYPES = frozenset({"sqlite"})
"""Types whose content is binary by nature (the others are text)."""


def explore(
    path: str | os.PathLike[str],
    file_type: str,
    *,
    byte_size: int | None = None,
    is_binary: bool = False,
) -> str:
    """Return the exploration summary of the file at ``path`` read as ``file_type``.

    Never raises because of the content; raises ``OSError`` if the file cannot be read.
    """
    path = Path(path)
    size = path.stat().st_size if byte_size is None else byte_size
    explorer = EXPLORERS.get(file_type)
    if explorer is None:
        return fallback_summary(path, size, is_binary=is_binary)
    if is_binary and file_type not in _BINARY_TYPES:
        reason = "the content is binary (NUL bytes or non-text data in the first 8 KB)"
    else:
        try:
            return explorer(path, size)
        except OSError:
            raise
        except RecursionError:
            reason = "it is nested too deeply"
        except ExplorationError as exc:
            reason = str(exc)
        except Exception as exc:  # an explorer bug must not break handling a file
            logger.debug("explorer for %s failed on %s", file_type, path, exc_info=True)
            reason = f"{type(exc).__name__}: {exc}"
    name = TYPE_NAMES.get(file_type, file_type)
    return f"Could not be parsed as {name}: {clip(reason, 300)}\n" + fallback_summary(
        path, size, is_binary=is_binary
    )
