"""The MCP server over streamable HTTP on loopback: bearer auth, /metrics, /healthz."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator

import pytest

from mnesis import MnesisConfig, MnesisSession, StorePool
from mnesis.cli import run
from mnesis.errors import InvalidArgumentError
from tests.compacted import EXTRACTIVE_32K
from tests.mcp.conftest import Stored

mcp = pytest.importorskip("mcp")
prometheus_client = pytest.importorskip("prometheus_client")

import httpx2  # noqa: E402
import uvicorn  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from prometheus_client import CollectorRegistry  # noqa: E402

from mcp import Client  # noqa: E402
from mnesis.mcp import MnesisMCP, build_http_app, check_bind  # noqa: E402
from mnesis.metrics import PrometheusMetrics  # noqa: E402

TOKEN = "s3cret-token"


@contextlib.asynccontextmanager
async def http_server(state: MnesisMCP, token: str | None) -> AsyncIterator[str]:
    """Serve ``state`` on a free loopback port; yields the base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = build_http_app(state, host="127.0.0.1", token=token)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            assert not task.done(), "the server stopped while starting"
            await asyncio.sleep(0.02)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
        sock.close()
        await state.close()


class TestAuth:
    async def test_no_or_wrong_token_is_a_bare_401(self, stored: Stored) -> None:
        state = MnesisMCP(MnesisConfig(), db_path=stored.db_path)
        async with http_server(state, TOKEN) as url, httpx2.AsyncClient() as http:
            for headers in [{}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}]:
                for path in ("/mcp", "/metrics"):
                    response = await http.post(f"{url}{path}", headers=headers, json={})
                    assert response.status_code == 401
                    assert response.content == b""
            assert (await http.get(f"{url}/healthz")).text == "ok"

    async def test_the_scheme_is_case_insensitive_and_the_token_exact(self, stored: Stored) -> None:
        # Issue 34: "bearer <token>" got 401; RFC 9110 makes the scheme case-insensitive.
        state = MnesisMCP(MnesisConfig(), db_path=stored.db_path)
        async with http_server(state, TOKEN) as url, httpx2.AsyncClient() as http:
            for scheme in ("bearer", "BEARER", "Bearer", "bEaReR"):
                headers = {"Authorization": f"{scheme} {TOKEN}"}
                # Past the auth: no metrics are configured here, so the route is 404.
                assert (await http.get(f"{url}/metrics", headers=headers)).status_code == 404
            for given in (
                f"Basic {TOKEN}",
                f"bearer {TOKEN.upper()}",
                f"xbearer {TOKEN}",
                f"bearer {TOKEN}x",
                "bearer",
            ):
                headers = {"Authorization": given}
                assert (await http.get(f"{url}/metrics", headers=headers)).status_code == 401

    def test_a_non_loopback_host_needs_a_token(self) -> None:
        with pytest.raises(InvalidArgumentError, match="without a bearer token"):
            check_bind("0.0.0.0", None)
        with pytest.raises(InvalidArgumentError):
            check_bind("example.com", None)
        check_bind("0.0.0.0", TOKEN)
        check_bind("127.0.0.1", None)
        check_bind("::1", None)
        check_bind("localhost", None)

    def test_the_command_refuses_to_start_off_loopback(
        self, stored: Stored, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.delenv("MNESIS_MCP_TOKEN", raising=False)
        code = run(["mcp", "--db", stored.db_path, "--http", "--host", "0.0.0.0"])
        assert code == 1
        assert "without a bearer token" in capsys.readouterr().err


class TestOverHttp:
    async def test_tools_scope_and_metrics_with_the_spec_names(
        self, stored: Stored, tmp_path: object
    ) -> None:
        registry = CollectorRegistry()
        metrics = PrometheusMetrics(registry)
        # A run in this process: its compactions land in the same registry.
        pool = StorePool()
        session = await MnesisSession.create(
            model="fake/m", db_path=f"{tmp_path}/run.db", pool=pool, config=EXTRACTIVE_32K
        )
        metrics.attach(session)
        for i in range(40):
            await session.record(f"step {i}: " + "words " * 150, "ok " * 150)
        await session.compaction_engine.wait_for_pending()
        await session.compact()
        await session.close()
        await pool.close_all()

        state = MnesisMCP(
            MnesisConfig(), db_path=stored.db_path, session_ids=[stored.beta], metrics=metrics
        )
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with http_server(state, TOKEN) as url:
            async with (
                httpx2.AsyncClient(headers=headers) as http,
                Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
            ):
                grep = await client.call_tool("lcm_grep", {"query": "API port"})
                assert not grep.is_error
                assert grep.structured_content["matches"][0]["id"] == stored.fact_message_id  # type: ignore[index]
                refused = await client.call_tool(
                    "lcm_grep", {"query": "x", "session_id": stored.alpha}
                )
                missing = await client.call_tool(
                    "lcm_grep", {"query": "x", "session_id": "sess_01ARZ3NDEKTSV4RRFFQ69G5FAV"}
                )
                assert refused.is_error and missing.is_error
                assert refused.content[0].text.replace(stored.alpha, "ID") == (  # type: ignore[union-attr]
                    missing.content[0].text.replace("sess_01ARZ3NDEKTSV4RRFFQ69G5FAV", "ID")  # type: ignore[union-attr]
                )
            async with httpx2.AsyncClient(headers=headers) as http:
                scraped = (await http.get(f"{url}/metrics")).text

        samples = {
            line.split(" ")[0]: float(line.rsplit(" ", 1)[1])
            for line in scraped.splitlines()
            if line and not line.startswith("#")
        }
        assert samples['lcm_compaction_runs_total{outcome="committed"}'] >= 1
        assert samples['lcm_summaries_created_total{kind="leaf"}'] >= 1
        assert samples["lcm_context_tokens_total"] > 0
        assert samples["lcm_search_latency_ms_count"] == 1, "a refused call searches nothing"
        assert 'lcm_search_latency_ms_bucket{le="+Inf"}' in samples
        assert "# TYPE lcm_expand_latency_ms histogram" in scraped
        for name in ("lcm_integrity_failures_total", "lcm_compaction_runs_total"):
            assert f"# TYPE {name} counter" in scraped
