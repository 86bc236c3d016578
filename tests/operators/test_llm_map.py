"""LLMMap: templates checked before any call, schema retries with feedback, the
concurrency limit, result correlation, events, early stop and the JSONL file mode.

Everything runs on :class:`FakeLLM`; no test asserts on timing.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from mnesis import EventBus, InvalidArgumentError, MnesisEvent, OperatorConfig
from mnesis.llm import Fail, FakeLLM, Hang, LLMRequest, Respond
from mnesis.operators import LLMMap, MapBatch, MapOptions, MapResult


class Person(BaseModel):
    name: str
    age: int


PERSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["name", "age"],
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "additionalProperties": False,
}


def last_user(request: LLMRequest) -> str:
    content = request.messages[-1]["content"]
    assert request.messages[-1]["role"] == "user"
    assert isinstance(content, str)
    return content


def echo(request: LLMRequest) -> str:
    """Reply with the prompt itself, so every output names its input."""
    return last_user(request)


def make_map(llm: FakeLLM, **config: Any) -> LLMMap:
    return LLMMap(OperatorConfig(**config), llm=llm, model="fake/map", retry_backoff=0)


class TestTemplatesAreCheckedBeforeAnyCall:
    @pytest.mark.parametrize(
        "template",
        [
            "Summarise this document.",
            "{# {{ item }} #} Summarise.",
            "{{ items }}",
            "",
        ],
    )
    async def test_a_template_without_item_is_refused_and_nothing_is_called(
        self, template: str
    ) -> None:
        llm = FakeLLM()
        operator = make_map(llm)
        with pytest.raises(InvalidArgumentError):
            operator.run(["a", "b"], template)
        with pytest.raises(ValueError):
            await operator.run_all(["a", "b"], template)
        assert llm.calls == []

    async def test_a_template_that_does_not_parse_is_refused(self) -> None:
        llm = FakeLLM()
        with pytest.raises(InvalidArgumentError, match="not a valid Jinja2 template"):
            make_map(llm).run(["a"], "{{ item ")
        assert llm.calls == []

    async def test_a_template_using_an_unknown_variable_is_refused(self) -> None:
        llm = FakeLLM()
        with pytest.raises(InvalidArgumentError, match="language"):
            make_map(llm).run(["a"], "Translate {{ item }} to {{ language }}")
        assert llm.calls == []

    async def test_item_attributes_index_and_filters_render(self) -> None:
        llm = FakeLLM(reply=echo)
        batch = await make_map(llm).run_all(
            [{"title": "Dune", "tags": ["sf"]}],
            "{{ index }}: {{ item.title }} {{ item.tags | tojson }}",
        )
        assert batch.results[0].output == '0: Dune ["sf"]'

    async def test_the_sandbox_stops_an_input_from_reaching_python_internals(self) -> None:
        llm = FakeLLM(reply=echo)
        batch = await make_map(llm).run_all(
            ["x"], "{{ item.__class__.__mro__[1].__subclasses__() }}"
        )
        assert batch.failed == 1
        assert "template" in (batch.results[0].error or "")
        assert llm.calls == []

    async def test_a_missing_attribute_fails_that_item_only(self) -> None:
        llm = FakeLLM(reply=echo)
        batch = await make_map(llm).run_all([{"title": "A"}, {}], "{{ item.title }}")
        assert [r.success for r in batch.results] == [True, False]
        assert len(llm.calls) == 1


class TestOutputSchemaRetries:
    async def test_invalid_outputs_are_retried_with_the_validation_error_as_feedback(
        self,
    ) -> None:
        llm = FakeLLM().script(
            Respond("I think the answer is Ada."),
            Respond('{"name": "Ada"}'),
            Respond('Here you go:\n```json\n{"name": "Ada", "age": 36}\n```'),
        )
        batch = await make_map(llm, max_retries=3).run_all(
            ["Ada Lovelace"], "Extract the person: {{ item }}", output_schema=Person
        )
        result = batch.results[0]
        assert result.success
        assert result.output == Person(name="Ada", age=36)
        assert result.attempts == 3
        assert len(llm.calls) == 3
        first, second, third = llm.calls
        assert last_user(first) == "Extract the person: Ada Lovelace"
        # The retry replays the bad reply and names what was wrong with it.
        assert second.messages[-2] == {"role": "assistant", "content": "I think the answer is Ada."}
        assert "Invalid JSON" in last_user(second)
        assert third.messages[-2]["content"] == '{"name": "Ada"}'
        assert "age" in last_user(third)
        assert "Field required" in last_user(third)

    async def test_the_schema_is_given_to_the_model_in_the_system_message(self) -> None:
        llm = FakeLLM(reply=lambda r: '{"name": "A", "age": 1}')
        await make_map(llm).run_all(
            ["a"], "{{ item }}", output_schema=Person, system_prompt="Be terse."
        )
        system = llm.calls[0].messages[0]
        assert system["role"] == "system"
        assert system["content"].startswith("Be terse.")
        assert '"age"' in system["content"]

    async def test_an_item_that_never_validates_is_marked_failed_after_max_retries(
        self,
    ) -> None:
        llm = FakeLLM(reply=lambda r: '{"name": "Ada", "age": "old"}')
        batch = await make_map(llm).run_all(
            ["Ada"], "{{ item }}", output_schema=Person, max_retries=2
        )
        result = batch.results[0]
        assert not result.success
        assert result.output is None
        assert result.attempts == 3
        assert len(llm.calls) == 3
        assert result.error is not None
        assert result.error.startswith("invalid output: age")
        assert "valid integer" in result.error
        assert batch.completed == 0
        assert batch.failed == 1

    async def test_max_retries_defaults_to_the_operator_config(self) -> None:
        llm = FakeLLM(reply=lambda r: "not json")
        batch = await make_map(llm, max_retries=1).run_all(
            ["a"], "{{ item }}", output_schema=Person
        )
        assert batch.results[0].attempts == 2
        assert len(llm.calls) == 2

    async def test_a_json_schema_dict_is_validated(self) -> None:
        llm = FakeLLM().script(Respond('{"name": "Ada", "age": 36, "x": 1}'))
        llm.script(Respond('{"name": "Ada", "age": 36}'))
        batch = await make_map(llm).run_all(["a"], "{{ item }}", output_schema=PERSON_SCHEMA)
        assert batch.results[0].output == {"name": "Ada", "age": 36}
        assert batch.results[0].attempts == 2
        assert "x" in last_user(llm.calls[1])

    async def test_the_feedback_names_every_problem_of_a_json_schema_dict_by_path(
        self,
    ) -> None:
        llm = FakeLLM().script(
            Respond('{"name": "Ada", "age": 1.5, "x": 1}'),
            Respond('{"age": 36}'),
            Respond('{"name": "Ada", "age": 36}'),
        )
        batch = await make_map(llm).run_all(["a"], "{{ item }}", output_schema=PERSON_SCHEMA)
        assert batch.results[0].output == {"name": "Ada", "age": 36}
        feedback = last_user(llm.calls[1])
        assert "$.age: 1.5 is not of type 'integer'" in feedback
        assert "'x' was unexpected" in feedback
        assert "$: 'name' is a required property" in last_user(llm.calls[2])

    async def test_the_feedback_for_alternatives_names_the_problem_of_each(self) -> None:
        schema = {
            "type": "object",
            "required": ["v"],
            "properties": {
                "v": {
                    "anyOf": [{"type": "integer"}, {"type": "array", "items": {"type": "string"}}]
                }
            },
        }
        llm = FakeLLM().script(Respond('{"v": [1]}'), Respond('{"v": 2}'))
        batch = await make_map(llm).run_all(["a"], "{{ item }}", output_schema=schema)
        assert batch.results[0].output == {"v": 2}
        feedback = last_user(llm.calls[1])
        assert "$.v: [1] is not valid under any of the given schemas" in feedback
        assert "option 1: $.v: [1] is not of type 'integer'" in feedback
        assert "option 2: $.v[0]: 1 is not of type 'string'" in feedback

    async def test_a_non_json_reply_to_a_json_schema_dict_is_retried(self) -> None:
        llm = FakeLLM().script(Respond("sure!"), Respond('{"name": "Ada", "age": 36}'))
        batch = await make_map(llm).run_all(["a"], "{{ item }}", output_schema=PERSON_SCHEMA)
        assert batch.results[0].attempts == 2
        assert "not valid JSON" in last_user(llm.calls[1])

    async def test_an_invalid_json_schema_is_refused_before_any_call(self) -> None:
        llm = FakeLLM()
        with pytest.raises(InvalidArgumentError, match="output_schema"):
            make_map(llm).run(["a"], "{{ item }}", output_schema={"type": "banana"})
        with pytest.raises(InvalidArgumentError, match="output_schema"):
            make_map(llm).run(["a"], "{{ item }}", output_schema=dict)  # type: ignore[arg-type]
        assert llm.calls == []

    async def test_without_a_schema_an_empty_reply_is_retried(self) -> None:
        llm = FakeLLM().script(Respond(""), Respond("fine"))
        batch = await make_map(llm).run_all(["a"], "{{ item }}")
        assert batch.results[0].output == "fine"
        assert "empty" in last_user(llm.calls[1])

    async def test_model_errors_and_timeouts_are_retried_then_reported(self) -> None:
        llm = FakeLLM().script(Fail("rate limited"), Hang(), Respond("ok"))
        batch = await make_map(llm).run_all(["a"], "{{ item }}", timeout=0.05)
        assert batch.results[0].output == "ok"
        assert batch.results[0].attempts == 3
        llm = FakeLLM().always(Fail("provider down"), times=3)
        batch = await make_map(llm).run_all(["a"], "{{ item }}", max_retries=2)
        assert not batch.results[0].success
        assert "provider down" in (batch.results[0].error or "")
        # A model error is retried with the same prompt, not with feedback.
        assert all(len(call.messages) == 1 for call in llm.calls)


class TestConcurrency:
    async def test_concurrent_calls_never_exceed_the_configured_limit(self) -> None:
        llm = FakeLLM(delay_seconds=0.002)
        batch = await make_map(llm, llm_map_concurrency=5).run_all(range(40), "{{ item }}")
        assert batch.completed == 40
        assert 1 < llm.max_in_flight <= 5

    async def test_the_default_limit_is_sixteen(self) -> None:
        llm = FakeLLM(delay_seconds=0.002)
        await make_map(llm).run_all(range(64), "{{ item }}")
        assert 1 < llm.max_in_flight <= 16

    async def test_the_run_argument_overrides_the_config(self) -> None:
        llm = FakeLLM(delay_seconds=0.002)
        await make_map(llm, llm_map_concurrency=16).run_all(range(20), "{{ item }}", concurrency=2)
        assert llm.max_in_flight <= 2

    async def test_retries_stay_within_the_limit(self) -> None:
        llm = FakeLLM(delay_seconds=0.002, reply=lambda r: "not json")
        await make_map(llm, llm_map_concurrency=3).run_all(
            range(10), "{{ item }}", output_schema=Person, max_retries=2
        )
        assert len(llm.calls) == 30
        assert llm.max_in_flight <= 3


class TestResultsCorrelateWithInputs:
    async def test_results_stream_in_completion_order_and_carry_their_input(self) -> None:
        # Later inputs get shorter replies, so they finish first.
        def reply(request: LLMRequest) -> str:
            number = int(last_user(request).split()[-1])
            return f"answer {number} " + "." * (20 - number) * 8

        llm = FakeLLM(reply=reply, chunk_chars=8)
        order: list[int] = []
        async for result in make_map(llm, llm_map_concurrency=20).run(range(20), "n {{ item }}"):
            assert result.success
            assert result.output.startswith(f"answer {result.input} ")
            assert result.index == result.input
            order.append(result.index)
        assert sorted(order) == list(range(20))
        assert order != sorted(order)

    async def test_run_all_sorts_by_index_and_counts(self) -> None:
        llm = FakeLLM(reply=echo)
        inputs = [f"doc-{i}" for i in range(30)]
        batch = await make_map(llm).run_all(inputs, "{{ item }}")
        assert isinstance(batch, MapBatch)
        assert [r.index for r in batch.results] == list(range(30))
        assert batch.outputs == inputs
        assert (batch.total, batch.completed, batch.failed) == (30, 30, 0)
        assert batch.failures == []
        assert batch.elapsed_ms >= 0

    async def test_inputs_can_be_an_async_iterable_consumed_lazily(self) -> None:
        pulled = 0

        async def numbers() -> Any:
            nonlocal pulled
            for n in range(1000):
                pulled += 1
                yield n

        llm = FakeLLM(reply=echo)
        async with contextlib.aclosing(
            make_map(llm, llm_map_concurrency=4).run(numbers(), "{{ item }}")
        ) as stream:
            first = await anext(stream)
            assert isinstance(first, MapResult)
            # Only what the workers and the bounded queue can hold was read.
            assert pulled < 50
        assert llm.in_flight == 0

    async def test_stopping_early_cancels_the_work_in_flight(self) -> None:
        llm = FakeLLM(delay_seconds=0.01)
        seen = 0
        async with contextlib.aclosing(
            make_map(llm, llm_map_concurrency=4).run(range(100), "{{ item }}")
        ) as stream:
            async for _ in stream:
                seen += 1
                if seen == 3:
                    break
        assert llm.in_flight == 0
        assert len(llm.calls) < 100

    @pytest.mark.parametrize("bad", ["abc", b"abc", {"a": 1}, 42])
    async def test_inputs_that_are_not_a_collection_are_refused(self, bad: Any) -> None:
        with pytest.raises(InvalidArgumentError, match="inputs"):
            make_map(FakeLLM()).run(bad, "{{ item }}")

    @pytest.mark.parametrize(
        "kwargs",
        [{"max_retries": -1}, {"timeout": 0}, {"concurrency": 0}, {"system_prompt": 3}],
    )
    async def test_bad_arguments_are_refused_before_any_call(self, kwargs: dict[str, Any]) -> None:
        llm = FakeLLM()
        with pytest.raises(InvalidArgumentError):
            make_map(llm).run(["a"], "{{ item }}", **kwargs)
        assert llm.calls == []

    async def test_a_model_is_required(self) -> None:
        with pytest.raises(InvalidArgumentError, match="model"):
            LLMMap(llm=FakeLLM()).run(["a"], "{{ item }}")


class TestOptionsObject:
    async def test_options_give_the_same_settings_as_keyword_arguments(self) -> None:
        llm = FakeLLM(reply=lambda r: '{"name": "Ada"}')
        options = MapOptions(output_schema=Person, max_retries=1, system_prompt="Be terse.")
        batch = await make_map(llm).run_all(["a"], "{{ item }}", options=options)
        assert batch.results[0].attempts == 2
        assert len(llm.calls) == 2
        assert llm.calls[0].messages[0]["content"].startswith("Be terse.")

    async def test_a_keyword_argument_wins_over_the_options(self) -> None:
        llm = FakeLLM(reply=lambda r: "not json")
        options = MapOptions(output_schema=Person, max_retries=0)
        batch = await make_map(llm).run_all(["a"], "{{ item }}", options=options, max_retries=2)
        assert batch.results[0].attempts == 3
        assert len(llm.calls) == 3

    async def test_run_and_run_jsonl_take_options(self, tmp_path: Path) -> None:
        llm = FakeLLM(reply=lambda r: "")
        options = MapOptions(max_retries=0, model="fake/other")
        results = [r async for r in make_map(llm).run(["a"], "{{ item }}", options=options)]
        assert results[0].attempts == 1
        assert llm.calls[0].model == "fake/other"
        source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
        write_jsonl(source, iter(["a", "b"]))
        summary = await make_map(llm).run_jsonl(
            str(source), str(target), "{{ item }}", options=options
        )
        assert (summary.total, summary.failed) == (2, 2)
        assert len(llm.calls) == 3

    @pytest.mark.parametrize(
        "options",
        [MapOptions(timeout=0), MapOptions(concurrency=0), {"max_retries": 1}],
    )
    async def test_bad_options_are_refused_before_any_call(self, options: Any) -> None:
        llm = FakeLLM()
        with pytest.raises(InvalidArgumentError):
            make_map(llm).run(["a"], "{{ item }}", options=options)
        assert llm.calls == []


class TestEvents:
    async def test_started_item_completed_and_completed_are_published(self) -> None:
        bus = EventBus()
        seen: list[tuple[MnesisEvent, dict[str, Any]]] = []
        bus.subscribe(None, lambda event, payload: seen.append((event, payload)))
        llm = FakeLLM(reply=echo).script(Fail("once"))
        operator = LLMMap(OperatorConfig(), bus, llm=llm, model="fake/map", retry_backoff=0)
        batch = await operator.run_all(["a", "b", "c"], "{{ item }}")
        kinds = [event for event, _ in seen]
        assert kinds[0] == MnesisEvent.MAP_STARTED
        assert kinds[-1] == MnesisEvent.MAP_COMPLETED
        assert kinds.count(MnesisEvent.MAP_ITEM_COMPLETED) == 3
        assert kinds.count(MnesisEvent.LLM_RETRY) == 1
        started, completed = seen[0][1], seen[-1][1]
        assert started["total"] == 3
        assert started["run_id"] == completed["run_id"] == batch.run_id
        assert (completed["completed"], completed["failed"]) == (3, 0)
        indexes = sorted(p["index"] for e, p in seen if e == MnesisEvent.MAP_ITEM_COMPLETED)
        assert indexes == [0, 1, 2]

    async def test_nothing_is_published_without_a_bus(self) -> None:
        batch = await make_map(FakeLLM()).run_all(["a"], "{{ item }}")
        assert batch.completed == 1


def write_jsonl(path: Path, rows: Iterator[Any]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


class TestJsonlFileMode:
    async def test_a_thousand_items_round_trip_through_files(self, tmp_path: Path) -> None:
        source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
        write_jsonl(source, ({"id": i, "name": f"person {i}"} for i in range(1000)))

        def reply(request: LLMRequest) -> str:
            number = int(last_user(request).split()[-1])
            return json.dumps({"name": f"person {number}", "age": number})

        llm = FakeLLM(reply=reply)
        summary = await make_map(llm, llm_map_concurrency=32).run_jsonl(
            str(source), str(target), "Who is {{ item.name }}", output_schema=Person
        )
        assert (summary.total, summary.completed, summary.failed) == (1000, 1000, 0)
        rows = read_jsonl(target)
        assert len(rows) == 1000
        assert sorted(r["index"] for r in rows) == list(range(1000))
        for row in rows:
            assert row["success"] is True
            assert row["input"] == {"id": row["index"], "name": f"person {row['index']}"}
            assert row["output"] == {"name": f"person {row['index']}", "age": row["index"]}
            assert row["error"] is None
        assert llm.max_in_flight <= 32

    async def test_blank_lines_are_skipped_and_bad_lines_become_failed_results(
        self, tmp_path: Path
    ) -> None:
        source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
        source.write_text('"a"\n\n{not json\n"b"\n', encoding="utf-8")
        llm = FakeLLM(reply=echo)
        summary = await make_map(llm).run_jsonl(str(source), str(target), "{{ item }}")
        assert (summary.total, summary.completed, summary.failed) == (3, 2, 1)
        rows = {r["index"]: r for r in read_jsonl(target)}
        assert rows[0]["output"] == "a"
        assert rows[3]["output"] == "b"
        assert rows[2]["success"] is False
        assert rows[2]["input"] == "{not json"
        assert "line 3 is not JSON" in rows[2]["error"]
        assert len(llm.calls) == 2

    async def test_a_missing_input_file_raises_and_a_bad_template_is_refused_first(
        self, tmp_path: Path
    ) -> None:
        operator = make_map(FakeLLM())
        with pytest.raises(FileNotFoundError):
            await operator.run_jsonl(
                str(tmp_path / "nope.jsonl"), str(tmp_path / "o"), "{{ item }}"
            )
        with pytest.raises(InvalidArgumentError):
            await operator.run_jsonl(str(tmp_path / "nope.jsonl"), str(tmp_path / "o"), "no")
        assert not (tmp_path / "o").exists()
