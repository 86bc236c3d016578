"""The fake model keeps a bounded window of recent requests plus a counter.

Issue 34: ``FakeLLM.calls`` kept every request, so a long session on the fake model
(the demo, ``MNESIS_MOCK_LLM=1``, users' long tests) grew by ~0.5 KB a turn.
"""

from __future__ import annotations

import pytest

from mnesis.errors import InvalidArgumentError
from mnesis.llm.base import LLMRequest
from mnesis.llm.fake import FakeLLM


async def _ask(llm: FakeLLM, text: str) -> None:
    request = LLMRequest("fake/m", [{"role": "user", "content": text}], max_tokens=50)
    async for _ in llm.stream(request):
        pass


async def test_calls_keep_the_most_recent_requests_and_count_them_all() -> None:
    llm = FakeLLM(keep_calls=3)
    for turn in range(10):
        await _ask(llm, f"turn {turn}")
    assert llm.call_count == 10
    assert [c.messages[0]["content"] for c in llm.calls] == ["turn 7", "turn 8", "turn 9"]
    assert llm.calls[-1].messages[0]["content"] == "turn 9"


async def test_the_default_window_is_bounded() -> None:
    llm = FakeLLM()
    for turn in range(llm.keep_calls + 5):
        await _ask(llm, f"turn {turn}")
    assert len(llm.calls) == llm.keep_calls
    assert llm.call_count == llm.keep_calls + 5


@pytest.mark.parametrize("keep", [-1, 1.5, True, "3"])
def test_a_bad_window_is_refused(keep: object) -> None:
    with pytest.raises(InvalidArgumentError, match="keep_calls"):
        FakeLLM(keep_calls=keep)  # type: ignore[arg-type]
