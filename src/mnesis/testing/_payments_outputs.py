"""Synthetic but realistic tool outputs for the ``payments_migration`` story.

The story's agent works on an imaginary repository, ``acme/payments``, a payments service
being migrated from blocking I/O (``requests``, ``psycopg2``) to asyncio (``httpx``,
SQLAlchemy's async engine on ``asyncpg``). Every function here is pure: the same
arguments (and the same ``random.Random`` state) give the same text.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = [
    "FAILURES",
    "MODULES",
    "Failure",
    "Module",
    "diff",
    "grep_output",
    "ls_files",
    "mypy_output",
    "pytest_log",
    "read_file_output",
    "server_log",
]


@dataclass(frozen=True, slots=True)
class Module:
    """One source file of the imaginary repository and the test file that covers it."""

    path: str
    kind: str
    owner: str
    functions: tuple[str, ...]
    test: str


@dataclass(frozen=True, slots=True)
class Failure:
    """A failure the migration runs into, and the fix the agent decides on."""

    error: str
    message: str
    line: str
    fix: str


MODULES: tuple[Module, ...] = (
    Module(
        "payments/db/session.py",
        "db",
        "",
        ("get_engine", "get_session", "transaction", "healthcheck"),
        "tests/db/test_session.py",
    ),
    Module(
        "payments/db/repositories.py",
        "repo",
        "ChargeRepository",
        ("get", "create", "mark_captured", "list_pending", "lock_for_update"),
        "tests/db/test_repositories.py",
    ),
    Module(
        "payments/clients/stripe_client.py",
        "client",
        "StripeClient",
        ("create_charge", "capture_charge", "refund_charge", "retrieve_balance"),
        "tests/clients/test_stripe_client.py",
    ),
    Module(
        "payments/clients/ledger.py",
        "client",
        "LedgerClient",
        ("post_entry", "reverse_entry", "get_account_balance", "reconcile_batch"),
        "tests/clients/test_ledger.py",
    ),
    Module(
        "payments/services/idempotency.py",
        "service",
        "IdempotencyStore",
        ("get", "put", "lock", "release"),
        "tests/services/test_idempotency.py",
    ),
    Module(
        "payments/services/fx.py",
        "service",
        "FxService",
        ("convert", "fetch_rates", "cached_rate"),
        "tests/services/test_fx.py",
    ),
    Module(
        "payments/api/routes/charges.py",
        "route",
        "",
        ("create_charge", "capture_charge", "get_charge", "list_charges"),
        "tests/api/test_charges.py",
    ),
    Module(
        "payments/api/routes/refunds.py",
        "route",
        "",
        ("create_refund", "get_refund", "list_refunds"),
        "tests/api/test_refunds.py",
    ),
    Module(
        "payments/api/routes/webhooks.py",
        "route",
        "",
        ("stripe_webhook", "verify_signature", "dispatch_event"),
        "tests/api/test_webhooks.py",
    ),
    Module(
        "payments/workers/reconcile.py",
        "worker",
        "",
        ("reconcile_day", "fetch_settlements", "match_entries", "report_mismatches"),
        "tests/workers/test_reconcile.py",
    ),
    Module(
        "payments/api/app.py",
        "app",
        "",
        ("create_app", "lifespan", "healthz", "main"),
        "tests/api/test_app.py",
    ),
)

FAILURES: tuple[Failure, ...] = (
    Failure(
        "sqlalchemy.exc.MissingGreenlet",
        "greenlet_spawn has not been called; can't call await_only() here. "
        "Was IO attempted in an unexpected place?",
        "customer_email = charge.customer.email",
        "eager-load Charge.customer with selectinload() because lazy loads cannot run "
        "under asyncio",
    ),
    Failure(
        "RuntimeError",
        "Task <Task pending name='Task-7'> got Future <Future pending> attached to a "
        "different loop",
        "async with engine.begin() as conn:",
        "create the AsyncEngine inside the FastAPI lifespan instead of at import time",
    ),
    Failure(
        "TypeError",
        "object Response can't be used in 'await' expression",
        "response = await self._http.post(url, json=payload, timeout=self._timeout)",
        "replace the requests.Session with one shared httpx.AsyncClient",
    ),
    Failure(
        "asyncpg.exceptions.TooManyConnectionsError",
        "sorry, too many clients already",
        "result = await session.execute(stmt)",
        "cap the async pool at pool_size=10, max_overflow=5 and close sessions in a finally block",
    ),
    Failure(
        "blockbuster.BlockingError",
        "Blocking call to time.sleep (<built-in function sleep>)",
        "time.sleep(self._backoff * 2**attempt)",
        "use asyncio.sleep for the retry backoff",
    ),
    Failure(
        "httpx.ReadTimeout",
        "timed out while reading from https://ledger.internal:9443/v2/entries",
        "response = await self._http.post(url, json=entry.model_dump())",
        "give every outbound call an explicit httpx.Timeout(10.0, connect=3.0)",
    ),
    Failure(
        "AssertionError",
        "assert settings.port == 8443\n  +  where 8080 = Settings(port=8080).port",
        "assert settings.port == 8443",
        "read the port from PAYMENTS_PORT with a default of 8443 in payments/config.py",
    ),
)

_HEADERS = {
    "db": ("from sqlalchemy import text", "from sqlalchemy.orm import Session, sessionmaker"),
    "repo": ("from sqlalchemy import select, update", "from payments.db.models import Charge"),
    "client": ("import requests", "from payments.config import settings"),
    "service": ("import redis", "from payments.config import settings"),
    "route": ("from fastapi import APIRouter, Depends, HTTPException", "router = APIRouter()"),
    "worker": ("import datetime as dt", "from payments.clients.ledger import LedgerClient"),
    "app": ("import uvicorn", "from fastapi import FastAPI"),
}


_ARGS = {
    "db": "charge_id: str, session_factory: sessionmaker[Session]",
    "route": "charge_id: str, repo: ChargeRepository = Depends(get_repo), "
    "stripe: StripeClient = Depends(get_stripe), ledger: LedgerClient = Depends(get_ledger)",
    "worker": "day: dt.date, client: SettlementClient, ledger: LedgerClient, "
    "ledger_rows: list[LedgerRow]",
    "app": "settings: Settings | None = None",
}


def _body(module: Module, name: str, is_async: bool) -> list[str]:
    aw = "await " if is_async else ""
    w = "async with" if is_async else "with"
    sleep = "await asyncio.sleep" if is_async else "time.sleep"
    if module.kind in ("client", "service"):
        return [
            f'url = f"{{self._base_url}}/v2/{name.replace("_", "-")}"',
            "for attempt in range(self._max_retries + 1):",
            f"    response = {aw}self._http.post(url, json=payload, timeout=self._timeout)",
            "    if response.status_code < 500:",
            "        break",
            f'    logger.warning("{name} attempt %d failed: %s", attempt, response.status_code)',
            f"    {sleep}(self._backoff * 2**attempt)",
            "response.raise_for_status()",
            "return response.json()",
        ]
    if module.kind in ("db", "repo"):
        factory = "self._session_factory" if module.owner else "session_factory"
        return [
            f"{w} {factory}() as session:",
            f"    stmt = select(Charge).where(Charge.id == charge_id)  # {name}",
            f"    result = {aw}session.execute(stmt)",
            "    charge = result.scalar_one_or_none()",
            "    if charge is None:",
            "        return None",
            f"    {aw}session.commit()",
            "    return charge",
        ]
    if module.kind == "route":
        return [
            f"charge = {aw}repo.get(charge_id)",
            "if charge is None:",
            '    raise HTTPException(status_code=404, detail=f"charge {charge_id} not found")',
            f"result = {aw}stripe.{name}(charge.stripe_id, "
            f'idempotency_key=f"{name}-{{charge_id}}")',
            f'{aw}ledger.post_entry(LedgerEntry.for_charge(charge, kind="{name}"))',
            "return ChargeOut.model_validate(result)",
        ]
    if module.kind == "app":
        return [
            "settings = Settings()  # port from PAYMENTS_PORT",
            'app = FastAPI(title="payments", lifespan=lifespan)',
            'app.include_router(charges.router, prefix="/v1")',
            'app.include_router(refunds.router, prefix="/v1")',
            f"{aw}engine.dispose()  # {name}",
            'uvicorn.run(app, host="0.0.0.0", port=settings.port)',
            "return app",
        ]
    return [
        f'logger.info("{name} starting for %s", day)',
        f"settlements = {aw}client.fetch_settlements(day)",
        "matched, missing = match_entries(settlements, ledger_rows)",
        "for row in missing:",
        f"    {aw}ledger.post_entry(row.as_correction())",
        'return {"matched": len(matched), "missing": len(missing)}',
    ]


def source(module: Module, *, is_async: bool) -> str:
    """The text of ``module``, before (sync) or after (async) its migration."""
    header = _HEADERS.get(module.kind, ("import logging",))
    lines = [
        f'"""{module.path.rsplit("/", 1)[-1]}: part of the payments service."""',
        "",
        "from __future__ import annotations",
        "",
        "import asyncio" if is_async else "import time",
        "import logging",
        "from typing import Any",
        "",
        *header,
        "",
        "logger = logging.getLogger(__name__)",
        "",
    ]
    indent = ""
    if module.owner:
        lines += [
            "",
            f"class {module.owner}:",
            f'    """{module.owner} for the payments service (timeouts from settings)."""',
            "",
            "    def __init__(self, base_url: str, *, timeout: float = 10.0) -> None:",
            "        self._base_url = base_url.rstrip('/')",
            "        self._timeout = timeout",
            "        self._max_retries = 3",
            "        self._backoff = 0.2",
            "",
        ]
        indent = "    "
    for name in module.functions:
        keyword = "async def" if is_async else "def"
        args = _ARGS.get(module.kind, "charge_id: str")
        if module.owner:
            args = "self, charge_id: str, payload: dict[str, Any]"
        if module.kind == "route":
            lines.append(f'@router.post("/{name.replace("_", "-")}/{{charge_id}}")')
        lines.append(f"{indent}{keyword} {name}({args}) -> Any:")
        lines.append(f'{indent}    """{name.replace("_", " ").capitalize()}."""')
        lines += [f"{indent}    {line}" for line in _body(module, name, is_async)]
        lines.append("")
    return "\n".join(lines)


def read_file_output(module: Module, *, is_async: bool) -> str:
    """``read_file`` output: the file with line numbers, like ``cat -n``."""
    text = source(module, is_async=is_async)
    return "\n".join(f"{n:>5}\t{line}" for n, line in enumerate(text.splitlines(), 1))


def diff(module: Module, function: str) -> str:
    """A unified diff turning one function of ``module`` async."""
    old = _body(module, function, False)
    new = _body(module, function, True)
    start = 20 + 12 * module.functions.index(function)
    lines = [
        f"--- a/{module.path}",
        f"+++ b/{module.path}",
        f"@@ -{start},{len(old) + 1} +{start},{len(new) + 1} @@",
        f"-    def {function}(...) -> Any:",
        f"+    async def {function}(...) -> Any:",
    ]
    for before, after in zip(old, new, strict=True):
        if before == after:
            lines.append(f"         {before}")
        else:
            lines += [f"-        {before}", f"+        {after}"]
    return "\n".join(lines)


def ls_files(rng: random.Random) -> str:
    """``git ls-files``: the repository layout, migrations included."""
    paths = {m.path for m in MODULES} | {m.test for m in MODULES}
    paths |= {
        "pyproject.toml",
        "Makefile",
        "README.md",
        "docker-compose.yml",
        "docker/Dockerfile",
        ".github/workflows/ci.yml",
        "payments/__init__.py",
        "payments/config.py",
        "payments/db/models.py",
        "payments/api/schemas.py",
        "payments/api/deps.py",
        "tests/conftest.py",
        "tests/contract/test_rest_contract.py",
        "tests/integration/test_end_to_end.py",
        "scripts/backfill_fx_rates.py",
        "scripts/replay_webhooks.py",
        "alembic.ini",
    }
    topics = ["charges", "refunds", "disputes", "ledger_entries", "fx_rates", "webhooks", "payouts"]
    for index in range(1, 41):
        year = 2021 + index // 12
        topic = rng.choice(topics)
        verb = rng.choice(["create", "add_index_to", "alter", "backfill"])
        paths.add(f"migrations/versions/{year}_{index:04d}_{verb}_{topic}.py")
    for pkg in ("api", "clients", "db", "services", "workers"):
        paths.add(f"payments/{pkg}/__init__.py")
        paths.add(f"tests/{pkg}/__init__.py")
    for name in ("architecture", "runbook", "oncall", "api", "async-migration"):
        paths.add(f"docs/{name}.md")
    return "\n".join(sorted(paths))


def grep_output(pattern: str, rng: random.Random, modules: tuple[Module, ...]) -> str:
    """``grep -rn`` matches of a blocking-I/O ``pattern`` in ``modules``."""
    lines = []
    for module in modules:
        for name in module.functions:
            for code in _body(module, name, False):
                if any(token in code for token in ("post(", "execute(", "sleep(", ".get(")):
                    line_no = 20 + 12 * module.functions.index(name) + rng.randint(2, 9)
                    lines.append(f"{module.path}:{line_no}:    {code.strip()}")
    header = f"$ grep -rnE '{pattern}' payments/"
    return "\n".join([header, *lines, f"({len(lines)} matches)"])


def _traceback(module: Module, failure: Failure, test: str) -> list[str]:
    function = test.removeprefix("test_").rsplit("_", 1)[0]
    return [
        f"{'_' * 20} {test} {'_' * 20}",
        "",
        f"client = <{module.path.replace('/', '.')[:-3]}.Client object at 0x7f3a2c1d9e50>",
        "",
        f"    async def {test}(client, httpx_mock):",
        "        httpx_mock.add_response(status_code=503)",
        '        httpx_mock.add_response(json={"id": "ch_3PZ9aB2eZvKYlo2C", "status": "ok"})',
        f'>       result = await client.{function}("ch_3PZ9aB2eZvKYlo2C", payload={{}})',
        "",
        f"{module.test}:{40 + len(test)}: ",
        "_ " * 40,
        f"{module.path}:{57 + len(function)}: in {function}",
        f"    {failure.line}",
        ".venv/lib/python3.11/site-packages/sqlalchemy/ext/asyncio/session.py:461: in execute",
        "    result = await greenlet_spawn(self.sync_session.execute, statement, **kw)",
        ".venv/lib/python3.11/site-packages/sqlalchemy/util/_concurrency_py3k.py:201: in "
        "greenlet_spawn",
        "    result = context.throw(*sys.exc_info())",
        *[f"E   {failure.error}: {line}" for line in failure.message.splitlines()],
        "",
    ]


def pytest_log(module: Module, rng: random.Random, failure: Failure | None) -> str:
    """``pytest -q`` output for ``module``'s test file, failing with ``failure`` if given."""
    suffixes = ("ok", "retries_on_5xx", "not_found", "idempotent", "timeout")
    tests = [f"test_{fn}_{s}" for fn in module.functions for s in suffixes]
    failed = rng.choice(tests) if failure else None
    dots = "".join("F" if t == failed else "." for t in tests)
    duration = rng.uniform(0.8, 6.5)
    lines = [
        "=" * 29 + " test session starts " + "=" * 30,
        "platform linux -- Python 3.11.9, pytest-8.2.1, pluggy-1.5.0",
        "rootdir: /srv/acme/payments",
        "configfile: pyproject.toml",
        "plugins: asyncio-0.23.7, anyio-4.4.0, httpx-0.30.0, blockbuster-1.5.5",
        "asyncio: mode=Mode.AUTO",
        f"collected {len(tests)} items",
        "",
        f"{module.test} {dots} [100%]",
        "",
    ]
    if failure and failed:
        lines += ["=" * 35 + " FAILURES " + "=" * 35, *_traceback(module, failure, failed)]
        lines += [
            "-" * 28 + " Captured log call " + "-" * 29,
            f"WARNING  {module.path.replace('/', '.')[:-3]}:{failed}:1 attempt 0 failed: 503",
            "=" * 27 + " short test summary info " + "=" * 28,
            f"FAILED {module.test}::{failed} - {failure.error}: "
            f"{failure.message.splitlines()[0][:60]}",
            f"{'=' * 20} 1 failed, {len(tests) - 1} passed in {duration:.2f}s {'=' * 20}",
        ]
    else:
        lines.append(f"{'=' * 25} {len(tests)} passed in {duration:.2f}s {'=' * 25}")
    return "\n".join(lines)


def mypy_output(rng: random.Random, modules: tuple[Module, ...]) -> str:
    """``mypy payments/`` complaining about half-migrated call sites."""
    lines = []
    for module in modules:
        for name in module.functions:
            if rng.random() < 0.45:
                line = rng.randint(20, 140)
                lines.append(
                    f'{module.path}:{line}: error: Value of type "Coroutine[Any, Any, Any]" '
                    f"must be used  [unused-coroutine]\n{module.path}:{line}: note: Are you "
                    f"missing an await? ({name})"
                )
    files = len({line.split(":", 1)[0] for line in lines})
    lines.append(f"Found {len(lines)} errors in {files} files (checked 58 source files)")
    return "\n".join(lines)


def server_log(rng: random.Random, port: int) -> str:
    """``docker compose logs api``: startup, requests, one crash with its traceback."""
    lines = [
        "payments-api-1  | INFO:     Started server process [1]",
        "payments-api-1  | INFO:     Waiting for application startup.",
        "payments-api-1  | INFO:     payments.db.session: async engine ready (pool_size=10)",
        "payments-api-1  | INFO:     Application startup complete.",
        f"payments-api-1  | INFO:     Uvicorn running on https://0.0.0.0:{port} "
        "(Press CTRL+C to quit)",
    ]
    for _ in range(rng.randint(18, 30)):
        route = rng.choice(["/v1/charges", "/v1/refunds", "/v1/webhooks/stripe", "/healthz"])
        status = rng.choice([200, 200, 200, 201, 404, 409])
        ip = f"10.0.{rng.randint(0, 9)}.{rng.randint(2, 250)}"
        lines.append(
            f'payments-api-1  | INFO:     {ip}:{rng.randint(30000, 60000)} - "POST '
            f'{route} HTTP/1.1" {status}'
        )
    lines += [
        "payments-api-1  | ERROR:    Exception in ASGI application",
        "payments-api-1  | Traceback (most recent call last):",
        'payments-api-1  |   File "/app/payments/api/routes/refunds.py", line 48, in create_refund',
        "payments-api-1  |     refund = await stripe.refund_charge(charge.stripe_id, payload)",
        'payments-api-1  |   File "/app/payments/clients/stripe_client.py", line 77, in '
        "refund_charge",
        "payments-api-1  |     response = await self._http.post(url, json=payload)",
        "payments-api-1  | httpx.ConnectTimeout: timed out connecting to api.stripe.com:443",
    ]
    return "\n".join(lines)
