"""The three compaction levels, for leaf summaries and for condensed ones.

Level 1 and Level 2 return ``None`` to escalate (model failure, timeout, empty
answer, no compression, overshoot); Level 3 never calls a model and always
returns a candidate within its target. Every candidate carries the bounded
``[LCM File IDs: ...]`` footer when its input mentions file IDs.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnesis import MessageWithParts, TextPart, TokenEstimator, ToolPart, ToolStatus
from mnesis.compaction import levels
from mnesis.compaction.file_ids import FILE_ID_RE
from mnesis.compaction.levels import (
    CONDENSE_LEVEL3_MAX_TOKENS,
    MIN_MESSAGES_TO_SUMMARISE,
    SummaryCandidate,
    condense_level1,
    condense_level2,
    condense_level3,
    extractive_candidate,
    level1_summarise,
    level2_summarise,
    level3_deterministic,
)
from mnesis.context.builder import ContextBudget
from mnesis.errors import LLMError, LLMTimeoutError
from mnesis.models.message import Message, Role
from mnesis.models.model_info import ModelInfo
from mnesis.models.parts import MessagePart
from mnesis.store.base import SummaryRecord
from mnesis.testing import SESSIONS, generate
from tests.compaction import small_window_config

ESTIMATOR = TokenEstimator()
BUDGET = ContextBudget.compute(
    ModelInfo.from_model_string(
        "fake/model", {"context_limit": 32_000, "max_output_tokens": 2_000}
    ),
    small_window_config(),
)
FOOTER = "[LCM File IDs: "


def _message(index: int, role: Role, parts: list[MessagePart]) -> MessageWithParts:
    message = MessageWithParts(
        message=Message(id=f"msg_{index:05d}", session_id="sess_test", role=role, created_at=0),
        parts=parts,
    )
    message.message.token_estimate = ESTIMATOR.estimate_message(message)
    return message


def span(fixture: str, turns: int, start: int = 0) -> list[MessageWithParts]:
    """Messages of a generated session, as the store would return them."""
    out: list[MessageWithParts] = []
    for turn in generate(SESSIONS[fixture]).turns[start : start + turns]:
        for role, parts in (("user", turn.user), ("assistant", turn.assistant)):
            out.append(_message(len(out), role, [p.model_copy(deep=True) for p in parts]))
    return out


def texts(*bodies: str) -> list[MessageWithParts]:
    roles: tuple[Role, Role] = ("user", "assistant")
    return [_message(i, roles[i % 2], [TextPart(text=b)]) for i, b in enumerate(bodies)]


def file_ids_in(messages: list[MessageWithParts]) -> set[str]:
    found: set[str] = set()
    for m in messages:
        for p in m.parts:
            for value in (getattr(p, "text", None), getattr(p, "output", None)):
                if isinstance(value, str):
                    found.update(re.findall(r"\bfile_[0-9a-f]{16}\b", value))
    return found


class Scripted:
    """An ``llm_call`` that answers from a script (the last answer repeats)."""

    def __init__(self, *answers: str | BaseException) -> None:
        self.answers = list(answers)
        self.requests: list[tuple[str, list[dict[str, Any]], int]] = []

    async def __call__(self, model: str, messages: list[dict[str, Any]], max_tokens: int) -> str:
        self.requests.append((model, messages, max_tokens))
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, BaseException):
            raise answer
        return answer


ModelLevel = Callable[..., Awaitable[SummaryCandidate | None]]
MODEL_LEVELS = pytest.mark.parametrize(
    ("level", "summarise"), [(1, level1_summarise), (2, level2_summarise)], ids=["L1", "L2"]
)


async def _run(summarise: ModelLevel, messages: list[MessageWithParts], llm: Scripted, **kw: Any):
    return await summarise(messages, "fake/model", BUDGET, ESTIMATOR, llm, **kw)


@MODEL_LEVELS
class TestModelLevelsEscalate:
    async def test_a_failing_model_escalates(self, level: int, summarise: ModelLevel) -> None:
        llm = Scripted(LLMError("rate limited"))
        assert await _run(summarise, span("bugfix_sprint", 10), llm) is None
        assert len(llm.requests) == 1

    async def test_a_timed_out_model_escalates(self, level: int, summarise: ModelLevel) -> None:
        llm = Scripted(LLMTimeoutError("no answer within 0.2s"))
        assert await _run(summarise, span("bugfix_sprint", 10), llm) is None

    @pytest.mark.parametrize("answer", ["", "   \n\t  "], ids=["empty", "blank"])
    async def test_an_empty_answer_escalates(
        self, level: int, summarise: ModelLevel, answer: str
    ) -> None:
        assert await _run(summarise, span("bugfix_sprint", 10), Scripted(answer)) is None

    async def test_a_summary_not_smaller_than_its_input_escalates(
        self, level: int, summarise: ModelLevel
    ) -> None:
        messages = texts(
            "Please rename the cursor helper in src/app/db/session.py.",
            "Renamed it to cursor_factory and updated the four callers.",
            "Thanks, now run the tests for the db package please.",
        )
        input_tokens = ESTIMATOR.estimate("\n\n".join(m.text for m in messages))
        longer = " ".join(["the cursor helper was renamed and every caller updated"] * 20)
        assert ESTIMATOR.estimate(longer) > 2 * input_tokens
        # A generous target, so only the convergence check can reject the answer.
        kw = {"target_tokens": 5_000}
        assert await _run(summarise, messages, Scripted(longer), **kw) is None
        shorter = "Renamed cursor helper to cursor_factory in src/app/db/session.py."
        candidate = await _run(summarise, messages, Scripted(shorter), **kw)
        assert candidate is not None and candidate.compaction_level == level

    async def test_a_summary_over_twice_the_target_escalates(
        self, level: int, summarise: ModelLevel
    ) -> None:
        messages = span("bugfix_sprint", 30)
        target = 300
        too_long = " ".join(f"item{i} handled" for i in range(400))
        assert ESTIMATOR.estimate(too_long) > 2 * target
        assert await _run(summarise, messages, Scripted(too_long), target_tokens=target) is None
        fits = " ".join(f"item{i} handled" for i in range(60))
        candidate = await _run(summarise, messages, Scripted(fits), target_tokens=target)
        assert candidate is not None
        assert candidate.token_count <= 2 * target

    async def test_a_good_answer_becomes_a_candidate_with_the_file_ids_footer(
        self, level: int, summarise: ModelLevel
    ) -> None:
        messages = span("artifact_flood", 12)
        answer = "## Goal\n- Ship the bundle; artifacts uploaded and compared."
        candidate = await _run(summarise, messages, Scripted(answer))
        assert candidate is not None
        assert candidate.compaction_level == level
        assert candidate.text.startswith(answer)
        assert FOOTER in candidate.text
        assert set(candidate.file_ids) == file_ids_in(messages)
        assert candidate.token_count == ESTIMATOR.estimate(candidate.text)
        assert candidate.token_count <= 600
        assert candidate.span_start_message_id == messages[0].id
        assert candidate.span_end_message_id == messages[-1].id
        assert candidate.messages_covered == len(messages)

    async def test_the_input_is_capped_at_75_percent_of_the_model_window(
        self, level: int, summarise: ModelLevel
    ) -> None:
        messages = span("bugfix_sprint", 30)
        window = 16_000
        candidate = await _run(
            summarise, messages, Scripted("short summary"), model_context_limit=window
        )
        assert candidate is not None
        covered = messages[: candidate.messages_covered]
        assert MIN_MESSAGES_TO_SUMMARISE <= len(covered) < len(messages)
        assert sum(m.message.token_estimate for m in covered) <= 0.75 * window
        tiny = await _run(summarise, messages, Scripted("short summary"), model_context_limit=10)
        assert tiny is not None and tiny.messages_covered == MIN_MESSAGES_TO_SUMMARISE


class TestModelLevelPrompts:
    async def test_level1_asks_for_the_eight_structured_sections(self) -> None:
        llm = Scripted("ok")
        await _run(level1_summarise, span("bugfix_sprint", 4), llm)
        system = llm.requests[0][1][0]["content"]
        for section in ("## Goal", "## Key Instructions & Constraints", "## Remaining Work"):
            assert section in system

    async def test_level2_cuts_each_message_to_500_characters(self) -> None:
        llm = Scripted("ok")
        messages = span("bugfix_sprint", 6)
        assert (
            max(len(m.text) + sum(len(p.output or "") for p in m.tool_parts) for m in messages)
            > 500
        )
        await _run(level2_summarise, messages, llm)
        system, user = (m["content"] for m in llm.requests[0][1])
        assert "GOAL:" in system and "CONSTRAINTS:" in system
        blocks = re.split(r"\n\n(?=\[(?:user|assistant) msg_)", user)
        assert len(blocks) == len(messages)
        for block in blocks:
            body = block.split("\n", 1)[1]
            assert len(body) <= 500 + len(" …")


LEVEL3_INPUTS: dict[str, Callable[[], list[MessageWithParts]]] = {
    "coding_span": lambda: span("bugfix_sprint", 40),
    "artifact_span": lambda: span("artifact_flood", 60),
    "one_giant_tool_output": lambda: [
        _message(
            0,
            "assistant",
            [
                ToolPart(
                    tool_name="read_file",
                    tool_call_id="c1",
                    input={"path": "src/app/huge.py"},
                    output="x = compute(value, other)  # never mind\n" * 8_000,
                )
            ],
        )
    ],
    "control_characters": lambda: texts(
        "\x00\x07{}[]<>\u202e\u200b" * 300 + " λЖ漢😀 must never break",
        "\ufffd" * 2_000,
        "é" * 5_000,
    ),
    "tool_calls_without_output": lambda: [
        _message(
            0,
            "assistant",
            [
                ToolPart(tool_name="bash", tool_call_id="p", status=ToolStatus(state="pending")),
                ToolPart(
                    tool_name="bash",
                    tool_call_id="e",
                    error_message="boom",
                    status=ToolStatus(state="error"),
                ),
            ],
        )
    ],
    "one_short_message": lambda: texts("ok"),
}


class TestLevelThreeAlwaysSucceeds:
    @pytest.mark.parametrize("target", [64, 600, 2_000])
    @pytest.mark.parametrize("name", list(LEVEL3_INPUTS))
    def test_returns_a_candidate_within_the_target(self, name: str, target: int) -> None:
        messages = LEVEL3_INPUTS[name]()
        candidate = level3_deterministic(messages, BUDGET, ESTIMATOR, target_tokens=target)
        assert candidate.compaction_level == 3
        assert candidate.text.strip()
        assert candidate.token_count == ESTIMATOR.estimate(candidate.text)
        assert candidate.token_count <= target
        assert candidate.messages_covered == len(messages)

    def test_file_ids_of_messages_whose_prose_is_dropped_stay_in_the_footer(self) -> None:
        early = "file_00000000deadbeef"
        messages = [
            *texts(f"Keep {early} for the audit."),
            *span("bugfix_sprint", 30),
        ]
        candidate = level3_deterministic(messages, BUDGET, ESTIMATOR, target_tokens=200)
        assert early in candidate.file_ids
        assert FOOTER in candidate.text and early in candidate.text
        assert candidate.token_count <= 200

    @settings(
        max_examples=60,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(
        bodies=st.lists(st.text(min_size=1, max_size=3_000), min_size=1, max_size=8),
        ids=st.lists(st.integers(min_value=0, max_value=2**64 - 1), max_size=200),
        target=st.integers(min_value=64, max_value=1_500),
    )
    def test_never_exceeds_the_target_on_arbitrary_text(
        self, bodies: list[str], ids: list[int], target: int
    ) -> None:
        bodies = [*bodies, " ".join(f"file_{i:016x}" for i in ids) or "no ids"]
        messages = texts(*bodies)
        candidate = level3_deterministic(messages, BUDGET, ESTIMATOR, target_tokens=target)
        assert candidate.token_count <= target
        assert candidate.compaction_level == 3


def _summary(index: int, content: str, file_ids: list[str]) -> SummaryRecord:
    return SummaryRecord(
        id=f"sum_{index:04d}",
        session_id="sess_test",
        kind="leaf",
        depth=0,
        level=1,
        content=content,
        token_count=ESTIMATOR.estimate(content),
        file_ids=file_ids,
        source_message_count=20,
    )


def leaf_summaries(count: int = 6, fixture: str = "artifact_flood") -> list[SummaryRecord]:
    """Real extractive leaf summaries of consecutive spans of a fixture."""
    out = []
    for i in range(count):
        messages = span(fixture, 10, start=10 * i)
        c = extractive_candidate(messages, BUDGET, ESTIMATOR, level=1, target_tokens=600)
        out.append(_summary(i, c.text, c.file_ids))
    return out


class TestCondensation:
    @pytest.mark.parametrize("target", [900, 5_000])
    def test_condense_level3_stays_within_512_tokens(self, target: int) -> None:
        children = leaf_summaries(8)
        assert sum(c.token_count for c in children) > 4 * CONDENSE_LEVEL3_MAX_TOKENS
        candidate = condense_level3(children, ESTIMATOR, target_tokens=target, footer_cap=40)
        assert candidate.compaction_level == 3
        assert candidate.token_count == ESTIMATOR.estimate(candidate.text)
        assert candidate.token_count <= CONDENSE_LEVEL3_MAX_TOKENS

    def test_condense_level3_honours_a_target_below_512(self) -> None:
        candidate = condense_level3(leaf_summaries(4), ESTIMATOR, target_tokens=200, footer_cap=40)
        assert candidate.token_count <= 200

    @pytest.mark.parametrize("condense", [condense_level1, condense_level2], ids=["C1", "C2"])
    @pytest.mark.parametrize(
        "answer",
        [LLMError("down"), LLMTimeoutError("slow"), "", "  "],
        ids=["fail", "timeout", "empty", "blank"],
    )
    async def test_model_condensation_escalates_on_failure(
        self, condense: Callable[..., Awaitable[Any]], answer: str | BaseException
    ) -> None:
        result = await condense(
            leaf_summaries(3),
            "fake/model",
            BUDGET,
            ESTIMATOR,
            Scripted(answer),
            target_tokens=900,
            footer_cap=40,
        )
        assert result is None

    @pytest.mark.parametrize("condense", [condense_level1, condense_level2], ids=["C1", "C2"])
    async def test_model_condensation_escalates_when_it_does_not_compress(
        self, condense: Callable[..., Awaitable[Any]]
    ) -> None:
        children = leaf_summaries(2)
        bloated = "\n".join(c.content for c in children) * 2
        result = await condense(
            children,
            "fake/model",
            BUDGET,
            ESTIMATOR,
            Scripted(bloated),
            target_tokens=50_000,
            footer_cap=40,
        )
        assert result is None
        ok = await condense(
            children,
            "fake/model",
            BUDGET,
            ESTIMATOR,
            Scripted("GOAL: ship"),
            target_tokens=900,
            footer_cap=40,
        )
        assert ok is not None and ok.text.startswith("GOAL: ship")

    async def test_condense_level2_cuts_each_summary_to_800_characters(self) -> None:
        llm = Scripted("GOAL: ship")
        children = leaf_summaries(3)
        assert all(len(c.content) > 800 for c in children)
        await condense_level2(
            children, "fake/model", BUDGET, ESTIMATOR, llm, target_tokens=900, footer_cap=40
        )
        transcript = llm.requests[0][1][1]["content"]
        for block in transcript.split("\n\n[summary ")[1:]:
            body = block.split("\n", 1)[1]
            assert len(body) <= 800 + len(" …")


def _all_levels() -> list[tuple[str, Callable[[], Awaitable[Any]]]]:
    messages = span("artifact_flood", 12)
    children = leaf_summaries(3)
    answer = "## Goal\n- ship the bundle"

    async def l1() -> Any:
        return await _run(level1_summarise, messages, Scripted(answer))

    async def l2() -> Any:
        return await _run(level2_summarise, messages, Scripted(answer))

    async def l3() -> Any:
        return level3_deterministic(messages, BUDGET, ESTIMATOR)

    async def extractive() -> Any:
        return extractive_candidate(messages, BUDGET, ESTIMATOR, level=1)

    async def c1() -> Any:
        return await condense_level1(
            children, "m", BUDGET, ESTIMATOR, Scripted(answer), target_tokens=900, footer_cap=40
        )

    async def c2() -> Any:
        return await condense_level2(
            children, "m", BUDGET, ESTIMATOR, Scripted(answer), target_tokens=900, footer_cap=40
        )

    async def c3() -> Any:
        return condense_level3(children, ESTIMATOR, target_tokens=900, footer_cap=40)

    return [
        ("L1", l1),
        ("L2", l2),
        ("L3", l3),
        ("extractive", extractive),
        ("C1", c1),
        ("C2", c2),
        ("C3", c3),
    ]


class TestFileIdsFooter:
    @pytest.mark.parametrize("name", [n for n, _ in _all_levels()])
    async def test_every_level_appends_the_footer_when_the_input_mentions_file_ids(
        self, name: str
    ) -> None:
        make = dict(_all_levels())[name]
        candidate = await make()
        assert candidate is not None
        assert FOOTER in candidate.text
        footer = candidate.text[candidate.text.rindex(FOOTER) :]
        assert candidate.text.rstrip().endswith("]")
        shown = FILE_ID_RE.findall(footer)
        assert shown and set(shown) <= set(candidate.file_ids)
        assert candidate.file_ids[-1] in shown, "the most recent ID is shown"

    def test_no_footer_without_file_ids(self) -> None:
        messages = span("bugfix_sprint", 10)
        assert not file_ids_in(messages)
        candidate = level3_deterministic(messages, BUDGET, ESTIMATOR)
        assert FOOTER not in candidate.text and candidate.file_ids == []

    def test_thousands_of_ids_give_a_bounded_footer_that_counts_the_rest(self) -> None:
        messages = span("artifact_flood", 200)
        ids = file_ids_in(messages)
        assert len(ids) >= 2_000
        candidate = level3_deterministic(messages, BUDGET, ESTIMATOR, target_tokens=600)
        assert set(candidate.file_ids) == ids
        assert candidate.token_count <= 600
        footer = candidate.text[candidate.text.rindex(FOOTER) :]
        shown = FILE_ID_RE.findall(footer)
        assert 1 <= len(shown) <= 40
        match = re.search(r"\(\+(\d+) earlier IDs", footer)
        assert match is not None and int(match.group(1)) == len(ids) - len(shown)


# The seed / 0.4.0 names of the model levels: one implementation each pair, bound to a level.
PUBLIC_PAIRS = pytest.mark.parametrize(
    ("one", "two", "keywords"),
    [
        (levels.level1_summarise, levels.level2_summarise, ["target_tokens", "footer_cap"]),
        (levels.condense_level1, levels.condense_level2, ["target_tokens", "footer_cap", "prompt"]),
    ],
    ids=["summarise", "condense"],
)


@PUBLIC_PAIRS
def test_each_public_level_is_a_coroutine_function_of_its_own_name_and_docstring(
    one: ModelLevel, two: ModelLevel, keywords: list[str]
) -> None:
    for func in (one, two):
        assert inspect.iscoroutinefunction(func) and inspect.isfunction(func)
        assert func.__module__ == "mnesis.compaction.levels"
        assert func.__name__ == func.__qualname__ and func.__name__ in levels.__all__
        assert getattr(levels, func.__name__) is func
        assert func.__doc__ and func.__doc__.split()[0] in {"Level", "Merge"}
    assert one.__doc__ != two.__doc__


@PUBLIC_PAIRS
def test_a_public_level_pair_shares_one_signature_without_the_level(
    one: ModelLevel, two: ModelLevel, keywords: list[str]
) -> None:
    signature = inspect.signature(one)
    assert signature == inspect.signature(two)
    assert "level" not in signature.parameters
    assert signature.return_annotation in {"SummaryCandidate | None", "CondensedCandidate | None"}
    assert [p.name for p in signature.parameters.values() if p.kind is p.KEYWORD_ONLY] == keywords
    hints = typing.get_type_hints(one)
    assert set(hints) == {*signature.parameters, "return"}
    assert hints["model_context_limit"] is int and hints["llm_call"] == levels.LLMCall


async def test_the_public_condense_levels_run_at_their_own_level() -> None:
    children = leaf_summaries(3)
    assert all(len(c.content) > 800 for c in children)
    bodies: dict[int, list[str]] = {}
    for level, condense in ((1, levels.condense_level1), (2, levels.condense_level2)):
        llm = Scripted("GOAL: ship")
        candidate = await condense(children, "fake/model", BUDGET, ESTIMATOR, llm)
        assert candidate is not None and candidate.parent_node_ids == [c.id for c in children]
        assert candidate.compaction_level == level
        transcript = llm.requests[0][1][1]["content"]
        bodies[level] = [b.split("\n", 1)[1] for b in transcript.split("\n\n[summary ")[1:]]
    assert any(len(body) > 800 + len(" …") for body in bodies[1])
    assert all(len(body) <= 800 + len(" …") for body in bodies[2])
