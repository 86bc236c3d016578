"""The store contract (``tests/store/test_sqlite_store.py``), run on PostgreSQL.

The classes are the SQLite suite's own, collected here again with this folder's
``store`` fixture, so both backends pass the very same tests. Left out: the tests of
argument validation, which the validating facade does before any backend is called.
"""

from __future__ import annotations

import pytest

from tests.store.test_sqlite_store import (
    TestCompactionCommit as _CompactionCommit,
)
from tests.store.test_sqlite_store import (
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


class TestCompactionCommit(_CompactionCommit):
    # An empty compaction is an argument error: the facade rejects it before any backend.
    test_a_commit_that_replaces_nothing_is_an_invalid_argument = None


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
