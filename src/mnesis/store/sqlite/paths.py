"""Checks on a database file's path and header before SQLite opens it."""

from __future__ import annotations

import os

from mnesis.errors import MnesisStoreError, StoreCorruptError, StoreReadOnlyError

__all__ = ["check_header", "prepare_path"]

_SQLITE_MAGIC = b"SQLite format 3\x00"


def prepare_path(path: str) -> str:
    """The absolute path of a database file (its folder created), after refusing a
    directory or a file that is not an SQLite database; ``:memory:`` as it is."""
    if path == ":memory:":
        return path
    full = os.path.abspath(os.path.expanduser(path))
    parent = os.path.dirname(full)
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as exc:
        raise StoreReadOnlyError(f"cannot create directory {parent} for {full}: {exc}") from exc
    if os.path.isdir(full):
        raise StoreCorruptError(f"{full} is a directory, not a database file")
    check_header(full)
    return full


def check_header(path: str) -> None:
    """Refuse an existing file that is not an SQLite database before SQLite touches it."""
    try:
        with open(path, "rb") as handle:
            header = handle.read(len(_SQLITE_MAGIC))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise MnesisStoreError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if header and header != _SQLITE_MAGIC:
        raise StoreCorruptError(f"{path} is not a database (no SQLite header)")
