"""This directory runs on both store backends (``db_path`` is a file or a PostgreSQL URL)."""

from tests.backends import backend, db_path, migrated_pg_template, unopened_db_path

__all__ = ["backend", "db_path", "migrated_pg_template", "unopened_db_path"]
