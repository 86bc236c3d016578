"""What the PostgreSQL database itself enforces, checked with a plain psycopg connection
the way any other program could: the schema (tables, enums, foreign keys, triggers), the
migrations, NUL round trips and clear errors when the server cannot be reached.

The append-only triggers and context item constraints both databases enforce are in
``tests/store/contract/test_database_enforces.py``."""

from __future__ import annotations

import asyncio
from pathlib import Path

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnesis.config import StoreConfig
from mnesis.errors import MnesisStoreError, StoreBusyError
from mnesis.models.parts import TextPart
from mnesis.store import SessionRecord
from mnesis.store.postgres import PostgresDatabase, PostgresStore
from mnesis.store.postgres.db import Conn
from mnesis.store.postgres.migrations import MIGRATIONS
from mnesis.store.postgres.nul import escape_nul, unescape_nul
from tests.pg_fixtures import _with_database
from tests.store.contract.helpers import (
    append_text,
    make_commit,
    message_items,
    new_session,
)

pytestmark = pytest.mark.postgres


EXPECTED_TABLES = {
    "_mnesis_migrations": ["name", "applied_at"],
    "sessions": ["id", "parent_id", "model", "agent", "system_prompt", "title", "status",
                 "config", "created_at", "updated_at"],
    "messages": ["key", "id", "session_id", "seq", "role", "is_summary", "agent", "model_id",
                 "provider_id", "parent_id", "created_at", "tokens_input", "tokens_output",
                 "tokens_cache_read", "tokens_cache_write", "tokens_total", "cost",
                 "finish_reason", "token_estimate"],
    "message_parts": ["key", "id", "message_id", "session_id", "ordinal", "part_type",
                      "content", "text_content", "tool_name", "tool_call_id", "tool_state",
                      "compacted_at", "started_at", "completed_at", "token_estimate",
                      "created_at", "search_tsv", "search_context", "context_tsv"],
    "summaries": ["key", "id", "session_id", "kind", "depth", "level", "content",
                  "token_count", "file_ids", "message_id", "span_start_message_id",
                  "span_end_message_id", "source_message_count", "search_text",
                  "created_at", "search_tsv"],
    "summary_messages": ["summary_id", "message_id", "ordinal"],
    "summary_parents": ["summary_id", "parent_summary_id", "ordinal"],
    "context_items": ["session_id", "position", "item_type", "message_id", "summary_id",
                      "tokens", "created_at"],
    "file_references": ["content_id", "file_id", "path", "file_type", "token_count",
                        "byte_size", "exploration_summary", "session_id", "created_at"],
    "compaction_locks": ["session_id", "owner", "expires_at"],
    "map_runs": ["id", "kind", "created_at", "config"],
    "map_items": ["run_id", "idx", "input", "state", "attempts", "output", "error",
                  "session_id", "updated_at"],
    "import_sources": ["source_key", "format", "path", "session_id", "byte_offset", "lines",
                       "fingerprint", "messages", "state", "updated_at"],
    "part_vectors": ["id", "part_id", "message_id", "session_id", "created_at", "model",
                     "vector"],
    "summary_vectors": ["id", "summary_id", "session_id", "created_at", "model", "vector"],
    "history_chain": ["session_id", "link", "kind", "row_id", "hash", "migrated"],
    "session_usage": ["session_id", "upto_seq", "sum_input", "sum_output", "sum_cache_read",
                      "sum_cache_write", "sum_total"],
}  # fmt: skip


class TestSchema:
    async def test_every_table_has_exactly_the_expected_columns(
        self, raw: psycopg.Connection
    ) -> None:
        rows = raw.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = 'public' ORDER BY table_name, ordinal_position"
        ).fetchall()
        found: dict[str, list[str]] = {}
        for table, column in rows:
            found.setdefault(table, []).append(column)
        assert found == EXPECTED_TABLES

    async def test_closed_vocabularies_are_enums(self, raw: psycopg.Connection) -> None:
        rows = raw.execute(
            "SELECT t.typname, array_agg(e.enumlabel ORDER BY e.enumsortorder) "
            "FROM pg_type t JOIN pg_enum e ON e.enumtypid = t.oid GROUP BY t.typname"
        ).fetchall()
        assert dict(rows) == {
            "message_role": ["system", "user", "assistant", "tool"],
            "summary_kind": ["leaf", "condensed"],
            "context_item_type": ["message", "summary"],
            "tool_state": ["pending", "running", "completed", "error"],
            "message_part_type": [
                "text", "reasoning", "tool", "patch", "file", "file_ref", "subtask",
                "compaction", "step_start", "step_finish", "snapshot", "agent", "retry",
            ],
        }  # fmt: skip

    async def test_foreign_keys_tie_history_and_lineage_together(
        self, raw: psycopg.Connection
    ) -> None:
        rows = raw.execute(
            "SELECT conrelid::regclass::text, confrelid::regclass::text, "
            "(SELECT string_agg(attname, ',') FROM pg_attribute "
            " WHERE attrelid = conrelid AND attnum = ANY(conkey)) "
            "FROM pg_constraint WHERE contype = 'f' ORDER BY 1, 3"
        ).fetchall()
        assert {(r[0], r[2], r[1]) for r in rows} == {
            ("sessions", "parent_id", "sessions"),
            ("messages", "session_id", "sessions"),
            ("message_parts", "message_id", "messages"),
            ("message_parts", "session_id", "sessions"),
            ("summaries", "session_id", "sessions"),
            ("summaries", "message_id", "messages"),
            ("summaries", "span_start_message_id", "messages"),
            ("summaries", "span_end_message_id", "messages"),
            ("summary_messages", "summary_id", "summaries"),
            ("summary_messages", "message_id", "messages"),
            ("summary_parents", "summary_id", "summaries"),
            ("summary_parents", "parent_summary_id", "summaries"),
            ("context_items", "session_id", "sessions"),
            ("context_items", "message_id", "messages"),
            ("context_items", "summary_id", "summaries"),
            ("compaction_locks", "session_id", "sessions"),
            ("map_items", "run_id", "map_runs"),
            ("map_items", "session_id", "sessions"),
            ("import_sources", "session_id", "sessions"),
            ("part_vectors", "part_id", "message_parts"),
            ("summary_vectors", "summary_id", "summaries"),
            ("session_usage", "session_id", "sessions"),
        }

    async def test_full_text_columns_have_gin_indexes(self, raw: psycopg.Connection) -> None:
        rows = raw.execute(
            "SELECT indexname FROM pg_indexes WHERE indexdef LIKE '%USING gin (search_tsv)%' "
            "OR indexdef LIKE '%USING gin (((search_tsv || context_tsv)))%'"
        ).fetchall()
        assert {r[0] for r in rows} == {
            "message_parts_search_gin_idx",
            "message_parts_text_gin_idx",
            "message_parts_tool_gin_idx",
            "summaries_tsv_gin_idx",
        }

    async def test_every_history_table_has_its_append_only_triggers(
        self, raw: psycopg.Connection
    ) -> None:
        rows = raw.execute(
            "SELECT tgrelid::regclass::text, tgname FROM pg_trigger WHERE NOT tgisinternal"
        ).fetchall()
        assert set(rows) == {
            ("messages", "messages_no_delete"),
            ("messages", "messages_immutable"),
            ("message_parts", "message_parts_no_delete"),
            ("message_parts", "message_parts_immutable"),
            ("message_parts", "message_parts_index_context"),
            ("summaries", "summaries_no_update"),
            ("summaries", "summaries_no_delete"),
            ("summary_messages", "summary_messages_no_change"),
            ("summary_messages", "summary_messages_no_delete"),
            ("summary_parents", "summary_parents_no_change"),
            ("summary_parents", "summary_parents_no_delete"),
            ("sessions", "sessions_no_delete"),
            ("history_chain", "history_chain_no_update"),
            ("history_chain", "history_chain_no_delete"),
            *((t, "history_no_truncate") for t in (
                "sessions", "messages", "message_parts", "summaries", "summary_messages",
                "summary_parents", "history_chain")),
        }  # fmt: skip


def _config(url: str) -> StoreConfig:
    return StoreConfig(database_url=url, connection_timeout=10)


class TestMigrations:
    async def test_migrations_are_recorded_once_and_reopening_applies_nothing(
        self, pg_url: str
    ) -> None:
        for _ in range(2):
            db = PostgresDatabase(pg_url, _config(pg_url))
            await db.open()
            await db.close()
        with psycopg.connect(pg_url) as conn:
            rows = conn.execute("SELECT name FROM _mnesis_migrations ORDER BY name").fetchall()
        assert [r[0] for r in rows] == [name for name, _ in MIGRATIONS]

    async def test_concurrent_first_opens_migrate_once(self, pg_url: str) -> None:
        dbs = [PostgresDatabase(pg_url, _config(pg_url)) for _ in range(4)]
        await asyncio.gather(*(db.open() for db in dbs))
        try:
            store = PostgresStore(dbs[-1], pool=None, pool_key=pg_url)
            await store.create_session(SessionRecord(id="sess_1", model="m"))
            assert (await store.get_session("sess_1")).model == "m"
        finally:
            for db in dbs:
                await db.close()
        with psycopg.connect(pg_url) as conn:
            rows = conn.execute("SELECT name FROM _mnesis_migrations ORDER BY name").fetchall()
        assert [r[0] for r in rows] == [name for name, _ in MIGRATIONS]

    async def test_a_database_from_a_newer_mnesis_is_refused(self, pg_url: str) -> None:
        db = PostgresDatabase(pg_url, _config(pg_url))
        await db.open()
        await db.close()
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("INSERT INTO _mnesis_migrations VALUES ('m999_future', 0)")
        with pytest.raises(MnesisStoreError, match="newer mnesis"):
            await PostgresDatabase(pg_url, _config(pg_url)).open()

    async def test_another_applications_tables_are_left_alone(self, pg_url: str) -> None:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("CREATE TABLE sessions (x int)")
        with pytest.raises(MnesisStoreError, match="will not modify"):
            await PostgresDatabase(pg_url, _config(pg_url)).open()


class TestNulBytes:
    @given(st.text(alphabet=st.sampled_from("a\x00\x1a01 ")))
    def test_the_escaping_is_reversible_and_leaves_no_nul(self, text: str) -> None:
        encoded = escape_nul(text)
        assert "\x00" not in encoded
        assert unescape_nul(encoded) == text

    @settings(
        max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(st.text(alphabet=st.sampled_from(["a", "\x00", "\x1a", "0", "1", "é", "中"])))
    async def test_text_with_nul_and_escape_characters_round_trips_in_every_column(
        self, pg_store: PostgresStore, text: str
    ) -> None:
        sid = await new_session(pg_store, title=text, system_prompt=text, agent=text or "a")
        session = await pg_store.get_session(sid)
        assert (session.title, session.system_prompt) == (text, text)
        mid = await append_text(pg_store, sid, text)
        (part,) = (await pg_store.get_message(mid)).parts
        assert isinstance(part, TextPart) and part.text == text

    async def test_a_summary_and_a_map_error_keep_their_nul_bytes(
        self, pg_store: PostgresStore
    ) -> None:
        sid = await new_session(pg_store)
        for i in range(2):
            await append_text(pg_store, sid, f"m{i}")
        commit = make_commit(sid, await message_items(pg_store, sid), content="a\x00b\x1a0c")
        await pg_store.commit_compaction(commit)
        assert (await pg_store.get_summary(commit.summary.id)).content == "a\x00b\x1a0c"
        runs = pg_store.map_runs
        await runs.start("run1", kind="llm", config={}, inputs=['"x"'])
        assert await runs.claim("run1", 0) == 1
        await runs.fail("run1", 0, "boom\x00")
        assert (await runs.items("run1"))[0].error == "boom\x00"


class TestConnectionErrors:
    async def _open_error(self, url: str) -> str:
        with pytest.raises(MnesisStoreError) as info:
            await PostgresDatabase(url, StoreConfig(database_url=url, connection_timeout=3)).open()
        message = str(info.value)
        assert "\n" not in message and "Traceback" not in message
        return message

    async def test_a_refused_connection_is_one_clear_line(self) -> None:
        message = await self._open_error("postgresql://nobody:secret@127.0.0.1:1/nowhere")
        assert message.startswith("cannot connect to PostgreSQL postgresql://nobody@127.0.0.1:1")
        assert "refused" in message.lower() and "secret" not in message

    async def test_a_missing_database_is_one_clear_line(self, pg_dsn: str) -> None:
        message = await self._open_error(_with_database(pg_dsn, "no_such_db"))
        assert '"no_such_db" does not exist' in message

    async def test_a_wrong_password_is_one_clear_line(self, pg_dsn: str) -> None:
        host = pg_dsn.split("@", 1)[1].split("/", 1)[0]
        url = f"postgresql://mnesis_pw:wrong@{host}/postgres"
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute("CREATE ROLE mnesis_pw LOGIN PASSWORD 'right'")
            hba = conn.execute("SHOW hba_file").fetchone()
        assert hba is not None
        path, original = hba[0], None
        try:
            try:
                psycopg.connect(url).close()
                trusted = True
            except psycopg.OperationalError:
                trusted = False
            if trusted:
                # The throwaway cluster trusts everyone: a line for this role in front
                # makes it ask for the password.
                original = Path(path).read_text()  # noqa: ASYNC240
                with open(path, "w") as f:  # noqa: ASYNC230
                    f.write("host all mnesis_pw 127.0.0.1/32 scram-sha-256\n" + original)
                with psycopg.connect(pg_dsn, autocommit=True) as conn:
                    conn.execute("SELECT pg_reload_conf()")
            message = await self._open_error(url)
            assert "password authentication failed" in message and "wrong" not in message
        finally:
            if original is not None:
                with open(path, "w") as f:  # noqa: ASYNC230
                    f.write(original)
            with psycopg.connect(pg_dsn, autocommit=True) as conn:
                conn.execute("SELECT pg_reload_conf()")
                conn.execute("DROP ROLE mnesis_pw")

    async def test_a_malformed_url_is_one_clear_line(self) -> None:
        with pytest.raises(MnesisStoreError, match="invalid PostgreSQL URL") as info:
            PostgresDatabase("postgresql://host:notaport/db?bogus_option=1", StoreConfig())
        assert "\n" not in str(info.value)

    async def test_location_never_shows_the_password(self) -> None:
        db = PostgresDatabase("postgresql://u:pw@h:5/d?sslmode=require&password=x", StoreConfig())
        assert db.location == "postgresql://u@h:5/d?sslmode=require"


class TestTimeouts:
    async def test_a_statement_past_its_bound_is_a_typed_busy_error(self, pg_url: str) -> None:
        db = PostgresDatabase(pg_url, StoreConfig(database_url=pg_url, connection_timeout=0.5))
        await db.open()

        async def _slow(conn: Conn) -> None:
            await conn.execute("SELECT pg_sleep(30)")

        try:
            with pytest.raises(StoreBusyError, match=r"statement timeout .*\[57014\]"):
                await asyncio.wait_for(db.read(_slow), timeout=20)
        finally:
            await db.close()


class TestACancelledCaller:
    async def test_sees_cancelled_error_only_after_its_transaction_ended(self, pg_url: str) -> None:
        db = PostgresDatabase(pg_url, _config(pg_url))
        await db.open()
        started = asyncio.Event()
        ended: list[bool] = []

        async def slow(conn: Conn) -> None:
            started.set()
            await conn.execute("SELECT pg_sleep(0.3)")
            ended.append(True)

        try:
            task = asyncio.create_task(db.write(slow))
            await started.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            # Whatever the caller does next comes after the transaction, as on SQLite.
            assert ended == [True]
        finally:
            await db.close()
