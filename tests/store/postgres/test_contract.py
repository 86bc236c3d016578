"""The store contract (``tests/store/test_sqlite_store.py``), run on PostgreSQL.

The classes are the SQLite suite's own, collected here again with this folder's
``store`` fixture, so both backends pass the very same tests. Left out: the tests of
argument validation, which the validating facade does before any backend is called.
"""

from __future__ import annotations

import pytest

from tests.store.test_sqlite_store import (
    TestCompactionCommit,
    TestCompactionLock,
    TestContextItems,
    TestFileReferences,
    TestMessages,
    TestPartRoundTrip,
    TestSessions,
    TestTokenAccounting,
    TestToolLifecycle,
)

pytestmark = pytest.mark.postgres

__all__ = [
    "TestCompactionCommit",
    "TestCompactionLock",
    "TestContextItems",
    "TestFileReferences",
    "TestMessages",
    "TestPartRoundTrip",
    "TestSessions",
    "TestTokenAccounting",
    "TestToolLifecycle",
]
