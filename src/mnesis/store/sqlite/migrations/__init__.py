"""The SQLite schema, as an ordered list of named migrations (see ``versions``)."""

from mnesis.store.sqlite.migrations.versions import MIGRATIONS

__all__ = ["MIGRATIONS"]
