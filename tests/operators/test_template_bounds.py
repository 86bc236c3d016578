"""Hardening of the map operators (issue 17): templates are bounded in steps, time,
value sizes and output, render off the event loop, and every per-item failure
fails that item alone with a typed error, never the batch.

Everything runs on :class:`FakeLLM` and real SQLite files; no test asserts on timing.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from typing import Any

import pytest

from mnesis import CompactionConfig, MnesisConfig, OperatorConfig, StorePool
from mnesis.llm import Fail, FakeLLM
from mnesis.models.ids import new_id
from mnesis.operators import AgenticMap, LLMMap, TemplateLimitError, TemplateRenderError
from mnesis.operators.template import ItemTemplate
from tests.backends import fetch

HOSTILE = {
    "huge range": "{{ item }} {{ range(10**9)|list|length }}",
    "string repetition": "{{ item }}{{ 'x' * 10**9 }}",
    "nested loops": (
        "{{ item }}{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"
    ),
    "doubling with ~": (
        "{{ item }}{% set ns = namespace(s='x') %}{% for i in range(60) %}"
        "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}"
    ),
    "doubling with +": (
        "{{ item }}{% set ns = namespace(s=[1]) %}{% for i in range(60) %}"
        "{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s|length }}"
    ),
    "center filter": "{{ item }}{{ ''|center(1000000000) }}",
    "str.center": "{{ item }}{{ 'x'.center(1000000000) }}",
    "format width": "{{ item }}{{ '{:>1000000000}'.format(1) }}",
    "percent width": "{{ item }}{{ '%1000000000s' % 1 }}",
    "huge power": "{{ item }}{{ 7 ** 100000000 }}",
    "exponential macro": (
        "{{ item }}{% macro f(n) %}{% if n < 60 %}{{ f(n + 1) }}{{ f(n + 1) }}"
        "{% endif %}{% endmacro %}{{ f(0) }}"
    ),
    "shared literals": (
        "{{ item }}{% set a = ['x' * 100000] %}{% set b = [a, a, a, a, a, a, a, a, a, a, a] %}"
        "{% set c = [b, b, b, b, b, b, b, b, b, b] %}{{ c }}"
    ),
    "to_bytes": "{{ item }}{{ (1).to_bytes(1000000000, 'big') }}",
    "quadratic sum": "{{ item }}{{ [[1]] * 100000 | sum(start=[]) }}",
    "replace": "{{ item }}{{ ('x' * 500000)|replace('x', 'yyyyy') }}",
    "join": "{{ item }}{{ ('x' * 100000).join(range(100000)|map('string')) }}",
    "macro buffer": (
        "{{ item }}{% macro m() %}{% for i in range(100000) %}{{ 'y' * 1000 }}"
        "{% endfor %}{% endmacro %}{{ m()|length }}"
    ),
    "output": "{{ item }}{% for i in range(100) %}{{ 'x' * 100000 }}{% endfor %}",
    "lipsum": "{{ item }}{{ lipsum(1000000) }}",
}


class TestABoundedRender:
    @pytest.mark.parametrize("template", HOSTILE.values(), ids=HOSTILE.keys())
    def test_a_runaway_template_fails_with_a_typed_limit_error(self, template: str) -> None:
        with pytest.raises(TemplateLimitError) as caught:
            ItemTemplate(template).render("input", 0)
        assert isinstance(caught.value, TemplateRenderError)
        assert isinstance(caught.value, ValueError)
        # Actionable: the message names the bound that was reached.
        assert re.search(r"limit|over|more than|longer than", str(caught.value))

    def test_arithmetic_errors_are_typed_render_errors(self) -> None:
        with pytest.raises(TemplateRenderError, match="ZeroDivisionError"):
            ItemTemplate("{{ item.a / item.b }}").render({"a": 1, "b": 0}, 0)

    def test_deep_recursion_is_a_typed_render_error(self) -> None:
        template = "{{ item }}{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"
        with pytest.raises(TemplateRenderError, match="nests too deeply"):
            ItemTemplate(template).render("x", 0)

    def test_lists_cannot_be_mutated_in_place(self) -> None:
        with pytest.raises(TemplateRenderError):
            ItemTemplate("{{ item.append(1) }}{{ item }}").render([1], 0)

    def test_ordinary_templates_render_as_before(self) -> None:
        template = (
            "{{ item.name }} #{{ index }}: {% for x in item.tags %}{{ loop.index }}/"
            "{{ loop.length }}={{ x|upper }} {% endfor %}{{ 'a' ~ 'b' }} "
            "{{ '%s-%d' % ('a', 3) }} {{ '{}!'.format('hi') }} {{ item.tags|join(',') }} "
            "{{ 2 ** 10 }} {{ item|tojson }} {{ 'ab' * 3 }} {{ [1, 2] + [3] }}"
        )
        item = {"name": "Ada", "tags": ["x", "y"]}
        assert ItemTemplate(template).render(item, 4) == (
            "Ada #4: 1/2=X 2/2=Y ab a-3 hi! x,y 1024 "
            '{"name": "Ada", "tags": ["x", "y"]} ababab [1, 2, 3]'
        )

    async def test_rendering_does_not_block_the_event_loop(self) -> None:
        template = ItemTemplate(HOSTILE["nested loops"])
        ticks = 0
        rendering = True

        async def tick() -> None:
            nonlocal ticks
            while rendering:
                ticks += 1
                await asyncio.sleep(0)

        ticker = asyncio.create_task(tick())
        try:
            with pytest.raises(TemplateLimitError):
                await template.render_async("x", 0)
        finally:
            rendering = False
            await ticker
        # The loop kept running other tasks while the template was being rendered.
        assert ticks > 1


def make_llm_map(llm: FakeLLM) -> LLMMap:
    return LLMMap(OperatorConfig(), llm=llm, model="fake/map", retry_backoff=0)


class TestLLMMapFailsOnlyTheItem:
    async def test_a_runaway_template_fails_each_item_and_the_batch_completes(self) -> None:
        llm = FakeLLM()
        batch = await make_llm_map(llm).run_all([1, 2, 3], HOSTILE["huge range"])
        assert [r.success for r in batch.results] == [False, False, False]
        assert {r.error_type for r in batch.results} == {"TemplateLimitError"}
        assert "range()" in (batch.results[0].error or "")
        assert llm.calls == []

    async def test_a_division_by_zero_fails_that_item_only(self) -> None:
        llm = FakeLLM()
        inputs = [{"a": 4, "b": 2}, {"a": 1, "b": 0}, {"a": 9, "b": 3}]
        batch = await make_llm_map(llm).run_all(inputs, "{{ item.a / item.b }}")
        assert [r.success for r in batch.results] == [True, False, True]
        failed = batch.results[1]
        assert failed.error_type == "TemplateRenderError"
        assert "ZeroDivisionError" in (failed.error or "")
        assert failed.attempts == 0
        assert len(llm.calls) == 2

    async def test_a_model_failure_is_typed(self) -> None:
        batch = await make_llm_map(FakeLLM().script(*[Fail("down")] * 4)).run_all(
            ["a"], "{{ item }}", max_retries=3
        )
        assert batch.results[0].error_type == "LLMError"


def query(db_path: str, sql: str, *args: object) -> list[tuple[Any, ...]]:
    return fetch(db_path, sql, *args)


def make_agentic(db_path: str, pool: StorePool, llm: FakeLLM, concurrency: int = 4) -> AgenticMap:
    return AgenticMap(
        OperatorConfig(agentic_map_concurrency=concurrency),
        model="fake/sub",
        db_path=db_path,
        pool=pool,
        llm=llm,
        session_config=MnesisConfig(compaction=CompactionConfig(auto=False)),
    )


class TestAgenticMapFailsOnlyTheItem:
    async def test_a_division_by_zero_fails_that_item_and_leaves_no_pending_row(
        self, db_path: str, pool: StorePool
    ) -> None:
        inputs = [{"a": i, "b": 1} for i in range(12)]
        inputs[5] = {"a": 1, "b": 0}
        run_id = new_id("run")
        batch = await make_agentic(db_path, pool, FakeLLM()).run_all(
            inputs, "{{ item.a / item.b }}", run_id=run_id
        )
        assert (batch.completed, batch.failed) == (11, 1)
        failed = batch.failures[0]
        assert failed.index == 5
        assert failed.error_type == "TemplateRenderError"
        assert "ZeroDivisionError" in (failed.error or "")
        states = dict(
            query(
                db_path,
                "SELECT idx, state FROM map_items WHERE run_id = ? ORDER BY idx",
                run_id,
            )
        )
        assert states == {i: ("failed" if i == 5 else "completed") for i in range(12)}

        # Read back on resume, the failure keeps its type.
        again = await make_agentic(db_path, pool, FakeLLM()).run_all(
            inputs, "{{ item.a / item.b }}", run_id=run_id
        )
        resumed = again.results[5]
        assert resumed.resumed and resumed.error_type == "TemplateRenderError"

    async def test_a_runaway_template_fails_each_item_with_a_limit_error(
        self, db_path: str, pool: StorePool
    ) -> None:
        llm = FakeLLM()
        batch = await make_agentic(db_path, pool, llm).run_all(
            ["a", "b"], HOSTILE["string repetition"]
        )
        assert batch.failed == 2
        assert {r.error_type for r in batch.results} == {"TemplateLimitError"}
        assert llm.calls == []


class TestACancelledRunResumesEachItemOnce:
    async def test_cancel_mid_run_then_resume_runs_every_item_to_completion_once(
        self, db_path: str, pool: StorePool
    ) -> None:
        count = 12
        items = [f"[item {i:02d}]" for i in range(count)]
        run_id = new_id("run")
        first_llm = FakeLLM(delay_seconds=0.01)
        operator = make_agentic(db_path, pool, first_llm, concurrency=3)
        seen: list[int] = []
        enough = asyncio.Event()

        async def consume() -> None:
            async with contextlib.aclosing(operator.run(items, "{{ item }}", run_id=run_id)) as s:
                async for result in s:
                    seen.append(result.index)
                    if len(seen) == 4:
                        enough.set()

        task = asyncio.create_task(consume())
        await enough.wait()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

        rows = query(db_path, "SELECT idx, state FROM map_items WHERE run_id = ?", run_id)
        states = {idx: state for idx, state in rows}
        # Nothing is left running: an interrupted item is pending again, so a resume
        # neither skips it nor sees it as someone else's.
        assert "running" not in states.values()
        completed_before = {idx for idx, state in states.items() if state == "completed"}
        assert set(seen) <= completed_before

        llm = FakeLLM()
        batch = await make_agentic(db_path, pool, llm, concurrency=3).run_all(
            items, "{{ item }}", run_id=run_id
        )
        assert (batch.completed, batch.failed) == (count, 0)
        assert {r.index for r in batch.results if r.resumed} == completed_before
        assert len(llm.calls) == count - len(completed_before)
        for idx, state, attempts, session_id in query(
            db_path,
            "SELECT idx, state, attempts, session_id FROM map_items WHERE run_id = ?",
            run_id,
        ):
            assert state == "completed"
            started = query(
                db_path,
                "SELECT count(DISTINCT s.id) FROM sessions s "
                "JOIN message_parts p ON p.session_id = s.id "
                "WHERE p.text_content LIKE ?",
                f"%{items[idx]}%",
            )[0][0]
            # attempts counts every claim; each claim that got as far as a
            # sub-session started one, so they agree up to a claim cancelled
            # before its sub-session existed.
            assert started <= attempts <= started + 1, (idx, attempts, started)
            answered = query(
                db_path,
                "SELECT count(*) FROM messages WHERE session_id = ? AND role = 'assistant' "
                "AND finish_reason = 'stop'",
                session_id,
            )[0][0]
            assert answered == 1, idx
