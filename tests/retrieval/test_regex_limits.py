"""Regex grep: patterns compiled with limits, snippets from the scan's own spans, memory bounded.

Issue 17 found ``grep("(?R)", mode="regex")`` ending in ``MemoryError`` at 588 MB and
``grep("(a|aa)+$|zzz", mode="regex")`` raising a bare ``TimeoutError`` from the snippet
builder; counted repeats such as ``((x?){1000}){1000}`` take seconds and a gigabyte to
compile, on the event loop.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import mnesis
from mnesis import MnesisConfig, MnesisSession, StorePool
from mnesis.config import RetrievalConfig
from mnesis.errors import InvalidArgumentError
from mnesis.retrieval.regex_pattern import MAX_PATTERN_CHARS
from mnesis.retrieval.regex_scan import OVERLAP_CHARS, WINDOW_CHARS

CALLS = [
    "(?R)",
    "(?0)",
    "(a)(?1)",
    "(a)(?+1)(b)",
    "(a)(?-1)",
    "(?P<n>a)(?&n)",
    "(?P<n>a)(?P>n)",
    "x|(?R)?y",
    "(?i)(?R)",
    r"\\(?R)",
    "(?(DEFINE)(?P<n>a))(?&n)",
    "(?x)(?P\n>n)(?P<n>a)",
    "(?x)(?&\n n)(?P<n>a)",
]
"""Recursion and subroutine calls, each one the ``regex`` engine compiles."""

EXPLOSIVE = [
    "((x?){1000}){1000}y",
    "(x{1000}){1000}",
    "(?:" + "x?" * 400 + "){1000}",
    "x{4294967294}",
    "x{1000000,}",
]
"""Counted repeats the engine unrolls at compile time (seconds and gigabytes, or forever)."""

ACCEPTED = [
    r"port \d{4}\b",
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    r"\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b",
    r".{0,500}deploy.{0,500}",
    r"(?P<word>\w+) (?P=word)",
    r"(?i)(?-i:API) port",
    r"\(\?R\)",
    r"(?:ab|cd){2,3}",
    r"[]()]{3}",
    r"[[:alpha:]]{2}",
]


async def _session(db_path: str, pool: StorePool, bound: float = 2.0) -> MnesisSession:
    config = MnesisConfig(retrieval=RetrievalConfig(regex_timeout_seconds=bound))
    return await MnesisSession.create(model="fake/m", db_path=db_path, pool=pool, config=config)


class TestPatternLimits:
    async def test_recursion_and_subroutine_calls_are_refused_before_any_scan(
        self, db_path: str, pool: StorePool
    ) -> None:
        session = await _session(db_path, pool)
        await session.record("aaa (?R) literal", "ok")
        for pattern in CALLS:
            with pytest.raises(InvalidArgumentError, match="recursion") as refused:
                await session.grep(pattern, mode="regex")
            assert "\n" not in str(refused.value)
        await session.close()

    async def test_counted_repeats_that_unroll_past_the_limit_are_refused(
        self, db_path: str, pool: StorePool
    ) -> None:
        session = await _session(db_path, pool)
        await session.record("xxxx", "ok")
        for pattern in EXPLOSIVE:
            with pytest.raises(InvalidArgumentError, match="repeat"):
                await asyncio.wait_for(session.grep(pattern, mode="regex"), timeout=30)
        await session.close()

    async def test_an_over_long_pattern_is_refused(self, db_path: str, pool: StorePool) -> None:
        session = await _session(db_path, pool)
        with pytest.raises(InvalidArgumentError, match=str(MAX_PATTERN_CHARS)):
            await session.grep("a" * (MAX_PATTERN_CHARS + 1), mode="regex")
        assert (await session.grep("a" * MAX_PATTERN_CHARS, mode="regex")).matches == []
        await session.close()

    async def test_everyday_patterns_are_still_accepted(
        self, db_path: str, pool: StorePool
    ) -> None:
        session = await _session(db_path, pool)
        turn = await session.record(
            "the API moved to port 8443 on 10.0.0.12, id 3f2a9c1e-0b7d-4e21-9a55-6c0d2e8f1a7b",
            "ok",
        )
        for pattern in ACCEPTED:
            await session.grep(pattern, mode="regex")
        found = await session.grep(ACCEPTED[1], mode="regex")
        assert turn.user_message_id in [m.id for m in found.matches]
        await session.close()

    async def test_verbose_mode_is_refused_with_a_way_out(
        self, db_path: str, pool: StorePool
    ) -> None:
        session = await _session(db_path, pool)
        for pattern in ["(?x)(?P<n>a) (?P=n)", "(?x) a b", "(?ix:a)"]:
            with pytest.raises(InvalidArgumentError, match="verbose"):
                await session.grep(pattern, mode="regex")
        await session.close()


class TestSnippetsFromTheScan:
    async def test_a_slow_match_is_not_matched_again_for_its_snippet(
        self, db_path: str, pool: StorePool
    ) -> None:
        # Matching this text takes ~0.3 s: a snippet builder that re-runs the pattern
        # (it had 0.05 s) raised a bare TimeoutError.
        session = await _session(db_path, pool, bound=20.0)
        turn = await session.record("x " + "a" * 25 + "b zzz", "ok")
        result = await session.grep("(a|aa)+$|zzz", mode="regex", scope="messages")
        assert [m.id for m in result.matches] == [turn.user_message_id]
        assert result.matches[0].matched_terms == ["zzz"]
        assert "zzz" in result.matches[0].snippet
        assert not result.timed_out
        await session.close()

    async def test_at_the_bound_the_call_returns_what_it_found_with_a_cursor(
        self, db_path: str, pool: StorePool
    ) -> None:
        session = await _session(db_path, pool, bound=0.5)
        await session.record("a" * 60 + "b zzz", "ok")
        quick = await session.record("zzz right away", "ok")
        result = await asyncio.wait_for(
            session.grep("(a|aa)+$|zzz", mode="regex", scope="messages"), timeout=30
        )
        assert result.timed_out
        assert result.next_cursor is not None
        assert [m.id for m in result.matches] == [quick.user_message_id]
        await session.close()


class TestLongTexts:
    async def test_matches_at_window_edges_are_found_and_anchors_stay_exact(
        self, db_path: str, pool: StorePool
    ) -> None:
        session = await _session(db_path, pool, bound=20.0)
        edge = WINDOW_CHARS - 3
        # Only the last 5,000 characters before "tail" are "y": a run of "y" as long as
        # the window would make "y{5000}tail" try 5,000 characters at each of its starts.
        filler = "y" + "z" * (WINDOW_CHARS + OVERLAP_CHARS - 5_001) + "y" * 5_000
        text = "x" * edge + "abc" + filler + "tail\nlast"
        turn = await session.record(text, "ok")
        for pattern, found in [
            ("abc", True),
            ("abc$", False),
            (r"\Aabc", False),
            ("^x", True),
            ("^last$", True),
            ("y{5000}tail", True),
            (r"(?<=x)abc(?=y)", True),
        ]:
            result = await session.grep(pattern, mode="regex", scope="messages")
            ids = [m.id for m in result.matches]
            assert (turn.user_message_id in ids) is found, pattern
        hit = await session.grep("abc", mode="regex", scope="messages")
        assert "abc" in hit.matches[0].snippet
        await session.close()


_MEMORY_PROBE = textwrap.dedent(
    """
    import asyncio, resource, sys
    import mnesis
    from mnesis import MnesisConfig, MnesisSession, StorePool
    from mnesis.config import CompactionConfig, RetrievalConfig
    from mnesis.errors import MnesisError

    def peak_mb():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024

    async def main(db_path, patterns):
        pool = StorePool()
        config = MnesisConfig(
            retrieval=RetrievalConfig(regex_timeout_seconds=1.5),
            compaction=CompactionConfig(auto=False),
        )
        session = await MnesisSession.create(
            model="fake/m", db_path=db_path, pool=pool, config=config
        )
        await session.record("hello world " + "a" * 40 + "b", "ok")
        letters = "".join(chr(97 + i * 7919 % 26) for i in range(2_000_000))
        await session.record(letters + "Q", "ok")
        before = peak_mb()
        for pattern in patterns:
            try:
                await session.grep(pattern, mode="regex")
            except MnesisError:
                pass
        await asyncio.sleep(3)  # let an abandoned matching thread reach its own timeout
        await session.close()
        await pool.close_all()
        print(mnesis.__file__, before, peak_mb())

    asyncio.run(main(sys.argv[1], sys.argv[2:]))
    """
)


def test_peak_memory_stays_bounded_during_hostile_regex_greps(tmp_path: Path) -> None:
    # (.)*Q keeps a capture per character it reads: 330 MB over the whole 2 MB text.
    patterns = ["(?R)", "(?0)|(?R)", "((x?){1000}){1000}y", "(a|aa)+$", "(.)*Q", r"(\w)+Q"]
    probe = subprocess.run(
        [sys.executable, "-c", _MEMORY_PROBE, str(tmp_path / "m.db"), *patterns],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(Path(mnesis.__file__).parents[1])},
    )
    assert probe.returncode == 0, probe.stderr[-2000:]
    imported, before_mb, after_mb = probe.stdout.split()[-3:]
    assert imported == mnesis.__file__, "the child must run the code under test"
    before, after = int(before_mb), int(after_mb)
    # The greps add nothing measurable to the peak; recursion took it to 590 MB, the
    # repeats to 1 GB, (.)*Q over the whole text to 330 MB.
    assert after - before < 150, f"peak RSS {before} MB before the greps, {after} MB after"
