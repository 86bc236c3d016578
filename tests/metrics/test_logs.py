"""Structured logs: a compaction's JSON line carries the specification's fields."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from mnesis import MnesisConfig, MnesisSession, StorePool
from mnesis.config import CompactionConfig
from mnesis.errors import InvalidArgumentError
from mnesis.logs import SPEC_FIELDS, CompactionLog, JsonFormatter, configure_logging
from mnesis.models.ids import is_valid_id


@pytest.fixture
def json_lines() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = configure_logging(format="json", level=logging.INFO, stream=stream)
    yield stream
    logging.getLogger("mnesis").removeHandler(handler)
    logging.getLogger("mnesis").setLevel(logging.NOTSET)


class TestJsonLogs:
    async def test_a_compaction_line_parses_and_carries_the_spec_fields(
        self, db_path: str, json_lines: io.StringIO
    ) -> None:
        config = MnesisConfig(
            model_overrides={"context_limit": 32_000, "max_output_tokens": 2_000},
            compaction=CompactionConfig(compaction_model="extractive"),
        )
        pool = StorePool()
        session = await MnesisSession.create(
            model="fake/m", db_path=db_path, pool=pool, config=config
        )
        CompactionLog().attach(session)
        for i in range(40):
            await session.record(f"step {i}: " + "words " * 150, "ok " * 150)
        await session.compaction_engine.wait_for_pending()
        await session.compact()
        await session.close()
        await pool.close_all()

        records = [json.loads(line) for line in json_lines.getvalue().splitlines()]
        compactions = [r for r in records if r.get("compaction_id")]
        committed = [r for r in compactions if r["event"] == "committed"]
        assert committed, records
        line = committed[0]
        assert set(SPEC_FIELDS) <= set(line)
        assert line["session_id"] == line["conversation_id"] == session.id
        assert is_valid_id(line["summary_id"], "sum")
        assert line["trigger_reason"] in {"soft_threshold", "hard_threshold", "manual"}
        assert line["token_before"] > line["token_after"] > 0
        assert line["level"] == "info" and line["logger"].startswith("mnesis")
        assert len({r["compaction_id"] for r in compactions}) == len(compactions)

    def test_extra_fields_and_exceptions_are_kept(self) -> None:
        record = logging.LogRecord("mnesis.x", logging.ERROR, __file__, 1, "boom %s", (1,), None)
        record.summary_id = "sum_x"
        record.custom = {"a": 1}
        data = json.loads(JsonFormatter().format(record))
        assert data["message"] == "boom 1"
        assert data["summary_id"] == "sum_x" and data["custom"] == {"a": 1}

    def test_an_unknown_format_is_refused(self) -> None:
        with pytest.raises(InvalidArgumentError):
            configure_logging(format="xml")  # type: ignore[arg-type]
