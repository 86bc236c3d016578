"""The ``payments_migration`` story: a coding agent migrating a payments service to asyncio.

A user gives a coding agent a long task with constraints and adds more along the way;
the agent explores the repository, edits modules one at a time, runs tests, hits real
async-migration failures, decides on fixes, and after the migration hardens the result
(type checks, a local stack, load tests). Tool-heavy turns carry several kilobytes of
tool output each, which is what makes a long session outgrow its window.

Everything comes from one ``random.Random(seed)``: the same ``(turns, seed)`` gives the
same turns, in the same order, with the same text. The user's instructions (the
kickoff's and the constraints added along the way) are the planted facts.
"""

from __future__ import annotations

import random
import re
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from mnesis.models.parts import MessagePart, TextPart, ToolPart, ToolStatus
from mnesis.testing import _payments_outputs as fx
from mnesis.testing._types import ConversationSpec, PlantedFact, Turn

__all__ = ["CONSTRAINTS", "KEY_INSTRUCTIONS", "KICKOFF", "payments_facts", "payments_turns"]

KICKOFF = (
    "Let's migrate the payments service (repo acme/payments) to async. Move the HTTP "
    "handlers to async FastAPI endpoints, replace `requests` with one shared "
    "`httpx.AsyncClient`, and move the database layer from psycopg2 to SQLAlchemy 2.0's "
    "async engine on asyncpg. Never touch migrations/: the DBA team owns the schema. "
    "The public REST contract must not change; tests/contract/ must pass untouched. "
    "Work module by module and run the tests after each one."
)

CONSTRAINTS: tuple[str, ...] = (
    "One more constraint from ops: the API must listen on port 8443 (TLS terminates at "
    "the new load balancer). Keep the health check at /healthz.",
    "Please don't add dependencies beyond httpx and asyncpg; the security review of a new "
    "package takes weeks.",
    "Keep the sync `LegacyLedgerClient` importable until v2.4.0: the nightly batch jobs "
    "still use it.",
    "Idempotency keys must stay in Redis with a 24h TTL. Do not move them to Postgres.",
    "Never run the integration suite against staging; use `make test-local` only.",
    "Make sure every outbound HTTP call has an explicit timeout (connect 3s, read 10s).",
)

KEY_INSTRUCTIONS: tuple[tuple[str, str], ...] = (
    ("never touch migrations/", "Never touch migrations/"),
    ("REST contract unchanged", "The public REST contract must not change"),
    ("listen on port 8443", "the API must listen on port 8443"),
    ("no new dependencies", "don't add dependencies beyond httpx and asyncpg"),
    ("keep LegacyLedgerClient", "`LegacyLedgerClient` importable until v2.4.0"),
    ("idempotency keys: Redis, 24h", "Idempotency keys must stay in Redis with a 24h TTL"),
    ("no integration suite on staging", "Never run the integration suite against staging"),
    ("explicit HTTP timeouts", "has an explicit timeout (connect 3s, read 10s)"),
)
"""``(label, phrase)``: each instruction the user gave and a phrase only it contains."""

_QUESTIONS = (
    "What's the status? Which modules are still sync?",
    "Why did the last test run fail, and what did you change?",
    "Is anything still blocking the event loop?",
    "Remind me which constraints we agreed on before you continue.",
    "How confident are you in the refund path? It moves real money.",
    "Summarise the decisions so far in three bullets.",
)

_NUDGES = ("Continue.", "Go ahead.", "OK, next step.", "Looks good, carry on.", "Proceed.")


@dataclass(frozen=True, slots=True)
class _Step:
    """One turn before it is numbered: a chat turn (``assistant is None``) or a recorded one."""

    user: str
    assistant: list[MessagePart] | None = None


@dataclass
class _Agent:
    """State of the imaginary agent: what it migrated and what it is doing next."""

    rng: random.Random
    calls: int = 0
    migrated: set[str] = field(default_factory=set)
    queue: deque[Callable[[], _Step]] = field(default_factory=deque)
    cycle: int = 0

    def _tool(
        self,
        name: str,
        args: dict[str, object],
        output: str | None = None,
        error: str | None = None,
    ) -> ToolPart:
        self.calls += 1
        state = "error" if error is not None else "completed"
        return ToolPart(
            tool_name=name,
            tool_call_id=f"call_{self.calls:05d}",
            input=args,
            output=output,
            error_message=error,
            status=ToolStatus(state=state),
        )

    def _turn(self, user: str, text: str, *tools: ToolPart) -> _Step:
        return _Step(user=user, assistant=[TextPart(text=text), *tools])

    # -- the opening ----------------------------------------------------------
    def explore(self) -> list[Callable[[], _Step]]:
        def listing() -> _Step:
            return self._turn(
                "Start by getting oriented in the repo.",
                "Listing the repository and reading the project metadata first.",
                self._tool("bash", {"command": "git ls-files"}, fx.ls_files(self.rng)),
                self._tool(
                    "read_file",
                    {"path": "payments/api/app.py"},
                    fx.read_file_output(fx.MODULES[-1], is_async=False),
                ),
            )

        def blocking_calls() -> _Step:
            pattern = r"requests\.|psycopg2|time\.sleep|\.execute\("
            return self._turn(
                "Where are the blocking calls?",
                "Searching for blocking I/O. I will leave migrations/ alone as instructed.",
                self._tool(
                    "grep",
                    {"pattern": pattern, "path": "payments/"},
                    fx.grep_output(pattern, self.rng, fx.MODULES),
                ),
            )

        return [listing, blocking_calls]

    # -- one module ----------------------------------------------------------
    def migrate(self, module: fx.Module) -> list[Callable[[], _Step]]:
        failure = self.rng.choice(fx.FAILURES) if self.rng.random() < 0.6 else None
        stale_edit = self.rng.random() < 0.25

        def read() -> _Step:
            return self._turn(
                f"Next: {module.path}.",
                f"Reading {module.path} to see which calls block.",
                self._tool(
                    "read_file",
                    {"path": module.path},
                    fx.read_file_output(module, is_async=False),
                ),
            )

        def edit() -> _Step:
            tools = []
            if stale_edit:
                tools.append(
                    self._tool(
                        "edit",
                        {"path": module.path, "old_string": f"def {module.functions[0]}("},
                        error=f"old_string not found in {module.path}: the file changed "
                        "since it was read; re-read it before editing",
                    )
                )
                tools.append(
                    self._tool(
                        "read_file",
                        {"path": module.path},
                        fx.read_file_output(module, is_async=False),
                    )
                )
            for function in module.functions[:3]:
                tools.append(
                    self._tool(
                        "edit",
                        {
                            "path": module.path,
                            "old_string": f"def {function}(",
                            "new_string": f"async def {function}(",
                        },
                        f"Applied 1 edit to {module.path}\n{fx.diff(module, function)}",
                    )
                )
            self.migrated.add(module.path)
            return self._turn(
                self.rng.choice(_NUDGES),
                f"Converting {module.path} to async: awaiting I/O and replacing "
                "time.sleep with asyncio.sleep.",
                *tools,
            )

        def test() -> _Step:
            return self._turn(
                "Run the tests for it.",
                f"Running {module.test}.",
                self._tool(
                    "bash",
                    {"command": f"pytest -q {module.test}"},
                    fx.pytest_log(module, self.rng, failure),
                ),
            )

        steps = [read, edit, test]
        if failure is not None:
            steps.append(lambda: self._fix(module, failure))
        return steps

    def _fix(self, module: fx.Module, failure: fx.Failure) -> _Step:
        function = module.functions[-1]
        return self._turn(
            "Fix that failure.",
            f"The failure is {failure.error}. Decided to {failure.fix}. Editing "
            f"{module.path} and re-running {module.test}.",
            self._tool(
                "edit",
                {"path": module.path, "old_string": failure.line, "new_string": "..."},
                f"Applied 1 edit to {module.path}\n{fx.diff(module, function)}",
            ),
            self._tool(
                "bash",
                {"command": f"pytest -q {module.test}"},
                fx.pytest_log(module, self.rng, None),
            ),
        )

    # -- after the migration -------------------------------------------------
    def harden(self) -> list[Callable[[], _Step]]:
        def typecheck() -> _Step:
            return self._turn(
                "Run the type checker over everything.",
                "Running mypy to find coroutines that are never awaited.",
                self._tool(
                    "bash", {"command": "mypy payments/"}, fx.mypy_output(self.rng, fx.MODULES)
                ),
            )

        def stack() -> _Step:
            timed_out = self.rng.random() < 0.3
            tools = [
                self._tool(
                    "bash",
                    {"command": "docker compose up -d && docker compose logs api"},
                    fx.server_log(self.rng, 8443),
                )
            ]
            if timed_out:
                tools.append(
                    self._tool(
                        "bash",
                        {"command": "make test-local"},
                        error="command timed out after 120s (make test-local)",
                    )
                )
            return self._turn(
                "Bring up the local stack and check the logs.",
                "Starting the stack with make test-local settings; the API binds port 8443.",
                *tools,
            )

        def load_test() -> _Step:
            rps = self.rng.uniform(900, 2400)
            p99 = self.rng.uniform(40, 180)
            report = "\n".join(
                [
                    "Running 60s test @ https://localhost:8443/v1/charges",
                    "  8 threads and 256 connections",
                    "  Thread Stats   Avg      Stdev     Max   +/- Stdev",
                    f"    Latency    {p99 / 3:.2f}ms   {p99 / 5:.2f}ms {p99 * 2:.2f}ms   81.02%",
                    f"    Req/Sec    {rps / 8:.2f}     {rps / 40:.2f}   {rps / 6:.2f}     70.11%",
                    "  Latency Distribution",
                    f"     50%   {p99 / 4:.2f}ms",
                    f"     99%   {p99:.2f}ms",
                    f"  {int(rps * 60)} requests in 1.00m",
                    f"Requests/sec: {rps:.2f}",
                ]
            )
            return self._turn(
                "How does it hold up under load?",
                f"Load test against the local stack: {rps:.0f} req/s, p99 {p99:.0f}ms. "
                "Decided to keep pool_size=10; the database is not the bottleneck.",
                self._tool("bash", {"command": "wrk -t8 -c256 -d60s --latency ..."}, report),
            )

        return [typecheck, stack, load_test]

    def refill(self) -> None:
        """Queue the next batch of work: each module in turn, then hardening, forever."""
        modules = fx.MODULES
        if self.cycle < len(modules):
            self.queue.extend(self.migrate(modules[self.cycle]))
        else:
            self.queue.extend(self.harden())
            self.queue.extend(self.migrate(self.rng.choice(modules)))
        self.cycle += 1


def _spread(turns: int, count: int) -> list[int]:
    """``count`` distinct turn indexes spread over ``1..turns-1``."""
    if turns <= 1:
        return []
    return sorted(
        {max(1, min(turns - 1, round(turns * (i + 1) / (count + 1)))) for i in range(count)}
    )


def _constraint_turns(turns: int) -> dict[int, str]:
    """The turn at which the user adds each of :data:`CONSTRAINTS` (a short session has fewer)."""
    return dict(zip(_spread(turns, len(CONSTRAINTS)), CONSTRAINTS, strict=False))


def payments_facts(spec: ConversationSpec) -> tuple[PlantedFact, ...]:
    """The user's instructions given in a ``spec.turns`` session: label, text and turn."""
    said = [(0, KICKOFF)] if spec.turns > 0 else []
    said += sorted(_constraint_turns(spec.turns).items())
    return tuple(
        PlantedFact(label, "user", sentence, phrase, turn)
        for label, phrase in KEY_INSTRUCTIONS
        for turn, text in said
        for sentence in re.split(r"(?<=[.;])\s+", text)
        if phrase in sentence
    )


def payments_turns(spec: ConversationSpec) -> Iterator[Turn]:
    """Yield the ``spec.turns`` turns of the session, deterministic in ``spec.seed``."""
    for index, step in enumerate(_steps(spec.turns, spec.seed)):
        yield Turn(index, (TextPart(text=step.user),), tuple(step.assistant or ()))


def _steps(turns: int, seed: int) -> Iterator[_Step]:
    rng = random.Random(seed)
    agent = _Agent(rng)
    constraint_at = _constraint_turns(turns)
    agent.queue.extend(agent.explore())
    for index in range(turns):
        if index == 0:
            yield _Step(user=KICKOFF)
        elif index in constraint_at:
            yield _Step(user=constraint_at[index])
        elif rng.random() < 0.07:
            yield _Step(user=rng.choice(_QUESTIONS))
        else:
            if not agent.queue:
                agent.refill()
            yield agent.queue.popleft()()
