"""The operators' options: each declared once (``LLMMapOptions``, ``AgenticMapOptions``),
shared by every ``run`` method, checked in one place before any model call or write.

A keyword that is no option raises ``UnknownOptionError`` (an ``InvalidArgumentError``
that is also a ``TypeError``, like Python's own unexpected-keyword error); a bad value
raises ``InvalidArgumentError``; neither calls the model, creates a run or writes a file.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any, get_type_hints

import pytest

from mnesis import InvalidArgumentError, MnesisSession, OperatorConfig, StorePool
from mnesis.llm import FakeLLM
from mnesis.models.ids import new_id
from mnesis.operators import (
    AgenticMapOptions,
    LLMMap,
    LLMMapOptions,
    MapOptions,
    UnknownOptionError,
)
from tests.backends import fetch
from tests.operators.agentic import make_map

DOCS = Path(__file__).parents[2] / "docs" / "operators.md"


def llm_map(llm: FakeLLM) -> LLMMap:
    return LLMMap(OperatorConfig(), llm=llm, model="fake/map", retry_backoff=0)


class TestTheOptionsAreDeclaredOnce:
    def test_map_options_has_a_field_for_every_llm_map_option(self) -> None:
        hints = get_type_hints(LLMMapOptions)
        fields = get_type_hints(MapOptions)
        assert [f.name for f in dataclasses.fields(MapOptions)] == [
            "output_schema",  # a parameter of run() of its own (0.4.0's third positional)
            *(name for name in hints if name != "options"),
        ]
        assert all(fields[name] == hints[name] for name in fields if name in hints)

    @pytest.mark.parametrize("declared", [LLMMapOptions, AgenticMapOptions])
    def test_every_option_is_optional_and_in_the_docs(self, declared: type) -> None:
        names = get_type_hints(declared)
        assert set(names) == declared.__optional_keys__
        text = DOCS.read_text(encoding="utf-8")
        assert [name for name in names if f"`{name}`" not in text] == []


class TestLLMMapOptions:
    @pytest.mark.parametrize("method", ["run", "run_all"])
    async def test_an_unknown_keyword_is_refused_before_any_call(self, method: str) -> None:
        llm = FakeLLM()
        with pytest.raises(UnknownOptionError) as raised:
            call = getattr(llm_map(llm), method)(["a"], "{{ item }}", concurency=2)
            if method == "run_all":
                await call
        assert isinstance(raised.value, TypeError)
        assert isinstance(raised.value, InvalidArgumentError)
        message = str(raised.value)
        assert f"LLMMap.{method}() got an unexpected keyword argument 'concurency'" in message
        assert "did you mean 'concurrency'?" in message
        assert llm.calls == []

    async def test_run_jsonl_refuses_an_unknown_keyword_before_opening_a_file(
        self, tmp_path: Path
    ) -> None:
        source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
        source.write_text('"a"\n', encoding="utf-8")
        llm = FakeLLM()
        with pytest.raises(UnknownOptionError, match=re.escape("LLMMap.run_jsonl()")):
            await llm_map(llm).run_jsonl(str(source), str(target), "{{ item }}", retries=1)
        assert not target.exists()
        assert llm.calls == []

    @pytest.mark.parametrize(
        "options",
        [
            {"timeout": "soon"},
            {"max_retries": 1.5},
            {"concurrency": True},
            {"output_schema": 3},
            {"model": ""},
            {"options": MapOptions(timeout=-1)},
        ],
    )
    async def test_a_bad_value_writes_no_output_file(
        self, tmp_path: Path, options: dict[str, Any]
    ) -> None:
        source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
        source.write_text('"a"\n', encoding="utf-8")
        llm = FakeLLM()
        with pytest.raises(InvalidArgumentError) as raised:
            await llm_map(llm).run_jsonl(str(source), str(target), "{{ item }}", **options)
        assert not isinstance(raised.value, UnknownOptionError)
        assert not target.exists()
        assert llm.calls == []

    async def test_options_given_as_none_take_the_defaults(self) -> None:
        llm = FakeLLM(reply=lambda r: "ok")
        batch = await llm_map(llm).run_all(
            ["a"], "{{ item }}", options=None, max_retries=None, timeout=None
        )
        assert batch.outputs == ["ok"]

    def test_the_keywords_become_one_options_object(self) -> None:
        base = MapOptions(model="fake/base", max_retries=1, timeout=5.0)
        chosen = MapOptions.from_keywords({"options": base, "max_retries": 3, "timeout": None})
        assert chosen == MapOptions(model="fake/base", max_retries=3, timeout=5.0)
        with pytest.raises(UnknownOptionError, match=re.escape("LLMMap.run_all()")):
            MapOptions.from_keywords({"template": "x"}, "LLMMap.run_all")


class TestAgenticMapOptions:
    @pytest.mark.parametrize("method", ["run", "run_all"])
    async def test_an_unknown_keyword_creates_no_run_and_no_session(
        self, db_path: str, pool: StorePool, parent: MnesisSession, method: str
    ) -> None:
        llm = FakeLLM()
        run_id = new_id("run")
        with pytest.raises(UnknownOptionError) as raised:
            call = getattr(make_map(db_path, pool, llm), method)(
                ["a"], "{{ item }}", run_id=run_id, read_onyl=True
            )
            if method == "run_all":
                await call
        assert isinstance(raised.value, TypeError)
        assert f"AgenticMap.{method}() got an unexpected keyword argument 'read_onyl'" in str(
            raised.value
        )
        assert "did you mean 'read_only'?" in str(raised.value)
        assert llm.calls == []
        assert fetch(db_path, "SELECT count(*) FROM map_runs WHERE id = ?", run_id) == [(0,)]
        assert fetch(db_path, "SELECT count(*) FROM sessions") == [(1,)]

    @pytest.mark.parametrize(
        "options",
        [
            {"read_only": "yes"},
            {"retry_failed": 1},
            {"max_turns": None},
            {"system_prompt": None},
            {"agent": " "},
            {"tools": {"name": "x"}},
            {"tool_handler": "not callable"},
            {"model": 42},
        ],
    )
    async def test_a_bad_value_creates_no_run(
        self, db_path: str, pool: StorePool, parent: MnesisSession, options: dict[str, Any]
    ) -> None:
        llm = FakeLLM()
        run_id = new_id("run")
        with pytest.raises(InvalidArgumentError) as raised:
            await make_map(db_path, pool, llm).run_all(
                ["a"], "{{ item }}", run_id=run_id, **options
            )
        assert not isinstance(raised.value, UnknownOptionError)
        assert llm.calls == []
        assert fetch(db_path, "SELECT count(*) FROM map_runs WHERE id = ?", run_id) == [(0,)]

    async def test_missing_options_take_their_documented_defaults(
        self, db_path: str, pool: StorePool, parent: MnesisSession
    ) -> None:
        llm = FakeLLM(reply=lambda r: "done")
        batch = await make_map(db_path, pool, llm).run_all(["a"], "{{ item }}")
        assert batch.outputs == ["done"]
        agent, parent_id = fetch(
            db_path,
            "SELECT agent, parent_id FROM sessions WHERE id = ?",
            batch.results[0].session_id,
        )[0]
        assert (agent, parent_id) == ("agentic-map", None)
        assert llm.calls[0].messages[0]["content"].startswith("You are a sub-agent")
