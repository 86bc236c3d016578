"""A deterministic fake model for tests and offline demos.

By default it answers every request with a reply derived from the last user
message (same input, same output). Scripted behaviours make it fail, hang,
return nothing, return garbage, return a fixed text, or call tools::

    llm = FakeLLM()
    llm.script(Fail("rate limited"), Hang(), Garbage(), Respond("ok"))

Each call consumes the next scripted behaviour; when the script is empty the
default reply is used. ``calls`` keeps the most recent requests (``keep_calls`` of
them, so a long session on the fake model does not grow without bound) and
``call_count`` counts them all; ``max_in_flight`` counts the highest number of
concurrent calls seen.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import re
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from mnesis.errors import InvalidArgumentError, LLMError
from mnesis.llm.base import LLMChunk, LLMRequest, ToolCall
from mnesis.models.tokens import TokenUsage
from mnesis.tokens.estimator import heuristic_token_count

__all__ = ["Empty", "Fail", "FakeBehaviour", "FakeLLM", "Garbage", "Hang", "Respond"]


@dataclass(frozen=True, slots=True)
class Respond:
    """Answer with ``text`` (and optionally tool calls)."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None


@dataclass(frozen=True, slots=True)
class Fail:
    """Raise :class:`~mnesis.errors.LLMError` (after streaming ``after_chars`` characters)."""

    message: str = "fake model failure"
    after_chars: int = 0


@dataclass(frozen=True, slots=True)
class Hang:
    """Never answer (the caller's timeout must fire)."""

    seconds: float = 3600.0


@dataclass(frozen=True, slots=True)
class Empty:
    """Answer with an empty string."""


@dataclass(frozen=True, slots=True)
class Garbage:
    """Answer with deterministic junk of ``chars`` characters."""

    chars: int = 4000
    seed: int = 0


FakeBehaviour = Respond | Fail | Hang | Empty | Garbage


def _last_user_text(request: LLMRequest) -> str:
    for message in reversed(request.messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return " ".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return ""


_SECTION_RE = re.compile(r"^## (.+)$", re.MULTILINE)
_FIELD_RE = re.compile(r"^([A-Z]+): \.\.\.$", re.MULTILINE)


def _summary_reply(request: LLMRequest, text: str) -> str | None:
    """For summarisation requests: the sections the prompt asks for, filled with words
    of the input, so the output is structured, smaller than the input and deterministic."""
    system = next((m.get("content") for m in request.messages if m.get("role") == "system"), "")
    if not isinstance(system, str):
        return None
    sections = _SECTION_RE.findall(system)
    fields = _FIELD_RE.findall(system)
    names = sections or fields
    if not names:
        return None
    words = [w for w in text.split() if not w.startswith("[")]
    budget = max(8, (request.max_tokens or 400) // 3)
    share = max(3, min(40, budget // len(names)))
    lines = []
    for index, name in enumerate(names):
        chunk = " ".join(words[index * share : (index + 1) * share]) or "-"
        lines.append(f"## {name}\n- {chunk}" if sections else f"{name}: {chunk}")
    return "\n".join(lines)


def default_reply(request: LLMRequest) -> str:
    """The fake's answer when nothing is scripted: short and deterministic."""
    text = _last_user_text(request)
    if request.purpose == "compaction":
        summary = _summary_reply(request, text)
        if summary is not None:
            return summary
    digest = hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:8]
    words = text.split()
    limit = 40 if request.purpose == "turn" else 120
    if request.max_tokens:
        limit = max(4, min(limit, request.max_tokens // 2))
    head = " ".join(words[:limit])
    return f"[fake {digest}] Noted: {head}"


class _RecentCalls(list[LLMRequest]):
    """A list that keeps only its ``limit`` most recent items on ``append``."""

    def __init__(self, limit: int, items: list[LLMRequest]) -> None:
        super().__init__(items[-limit:] if limit else [])
        self.limit = limit

    def append(self, item: LLMRequest) -> None:
        super().append(item)
        if len(self) > self.limit:
            del self[0]


@dataclass
class FakeLLM:
    """Deterministic stand-in for a model. Implements :class:`~mnesis.llm.base.LLMClient`."""

    reply: Callable[[LLMRequest], str] = default_reply
    chunk_chars: int = 24
    delay_seconds: float = 0.0
    keep_calls: int = 1000
    """How many of the most recent requests ``calls`` keeps."""
    calls: list[LLMRequest] = field(default_factory=list)
    """The most recent requests, oldest first (at most ``keep_calls``)."""
    call_count: int = 0
    """How many requests were made in all."""
    in_flight: int = 0
    max_in_flight: int = 0
    _script: deque[FakeBehaviour] = field(default_factory=deque)

    def __post_init__(self) -> None:
        if isinstance(self.keep_calls, bool) or not isinstance(self.keep_calls, int):
            raise InvalidArgumentError(f"keep_calls must be an int, got {self.keep_calls!r}")
        if self.keep_calls < 0:
            raise InvalidArgumentError(f"keep_calls must be >= 0, got {self.keep_calls}")
        self.calls = _RecentCalls(self.keep_calls, self.calls)

    def script(self, *behaviours: FakeBehaviour) -> FakeLLM:
        """Queue behaviours for the next calls (in order)."""
        self._script.extend(behaviours)
        return self

    def always(self, behaviour: FakeBehaviour, times: int = 1000) -> FakeLLM:
        """Queue the same behaviour ``times`` times."""
        self._script.extend([behaviour] * times)
        return self

    def clear(self) -> None:
        """Drop any queued behaviours."""
        self._script.clear()

    @property
    def pending(self) -> int:
        """Number of queued behaviours."""
        return len(self._script)

    async def stream(self, request: LLMRequest) -> AsyncIterator[LLMChunk]:
        """Stream the next behaviour's response."""
        self.calls.append(request)
        self.call_count += 1
        behaviour: FakeBehaviour | None = self._script.popleft() if self._script else None
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            async for chunk in self._run(request, behaviour):
                yield chunk
        finally:
            self.in_flight -= 1

    async def _run(
        self, request: LLMRequest, behaviour: FakeBehaviour | None
    ) -> AsyncIterator[LLMChunk]:
        if isinstance(behaviour, Hang):
            await asyncio.sleep(behaviour.seconds)
            raise LLMError("fake model hung and was not cancelled")
        if isinstance(behaviour, Fail):
            if behaviour.after_chars:
                yield LLMChunk(text="x" * behaviour.after_chars)
            raise LLMError(behaviour.message)
        tool_calls: list[ToolCall] = []
        finish = "stop"
        if isinstance(behaviour, Respond):
            text = behaviour.text
            tool_calls = list(behaviour.tool_calls)
            finish = behaviour.finish_reason or ("tool_calls" if tool_calls else "stop")
        elif isinstance(behaviour, Empty):
            text = ""
        elif isinstance(behaviour, Garbage):
            rng = random.Random(behaviour.seed)
            alphabet = "\x00\x07{}[]<>\"'\\#$%&*@~^|`\ufffd\u202e\u200bλЖ漢😀 \n\t"
            text = "".join(rng.choice(alphabet) for _ in range(behaviour.chars))
        else:
            text = self.reply(request)
        step = max(1, self.chunk_chars)
        for start in range(0, len(text), step):
            if self.delay_seconds:
                await asyncio.sleep(self.delay_seconds)
            else:
                await asyncio.sleep(0)
            yield LLMChunk(text=text[start : start + step])
        prompt_tokens = sum(
            heuristic_token_count(m["content"]) if isinstance(m.get("content"), str) else 0
            for m in request.messages
        )
        usage = TokenUsage(
            input=prompt_tokens,
            output=heuristic_token_count(text),
            total=prompt_tokens + heuristic_token_count(text),
        )
        yield LLMChunk(tool_calls=tool_calls, finish_reason=finish, usage=usage)
