"""Importers: bringing data written by other tools into a mnesis store."""

from mnesis.importers.mnesis_legacy import upgrade_database

__all__ = ["upgrade_database"]
