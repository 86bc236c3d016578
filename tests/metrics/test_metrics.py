"""The lcm_* Prometheus series follow a real session (extra ``metrics``)."""

from __future__ import annotations

import pytest

from mnesis import MnesisSession, StorePool
from mnesis.integrity import IntegrityChecker
from tests.compacted import EXTRACTIVE_32K, compact_now, record_steps

prometheus_client = pytest.importorskip("prometheus_client")

from prometheus_client import CollectorRegistry  # noqa: E402

from mnesis.metrics import PrometheusMetrics  # noqa: E402


def _value(registry: CollectorRegistry, name: str, **labels: str) -> float:
    value = registry.get_sample_value(name, labels or None)
    return 0.0 if value is None else value


class TestPrometheusMetrics:
    async def test_series_follow_turns_compactions_retrieval_and_checks(self, db_path: str) -> None:
        registry = CollectorRegistry()
        metrics = PrometheusMetrics(registry)
        pool = StorePool()
        session = await MnesisSession.create(
            model="fake/m", db_path=db_path, pool=pool, config=EXTRACTIVE_32K
        )
        metrics.attach(session)
        await record_steps(
            session,
            range(60),
            user=lambda i: f"step {i}: the port is 8443",
            reply=lambda i: f"running {i}",
            output="ok\n" * 400,
        )
        await compact_now(session)
        await session.grep("which port?")
        summary = (await session.store.get_context_items(session.id, item_type="summary"))[0]
        await session.expand(summary.item_id)
        metrics.record_integrity_report(await IntegrityChecker(session.store).run(session.id))

        assert _value(registry, "lcm_context_tokens_current", session=session.id) == (
            session.context_tokens
        )
        assert _value(registry, "lcm_context_tokens_total") > session.context_tokens
        assert _value(registry, "lcm_compaction_runs_total", outcome="committed") >= 1
        assert _value(registry, "lcm_summaries_created_total", kind="leaf") >= 1
        assert _value(registry, "lcm_search_latency_ms_count") == 1
        assert _value(registry, "lcm_expand_latency_ms_count") == 1
        assert _value(registry, "lcm_integrity_failures_total", kind="lost_from_view") == 0
        await session.close()
        await pool.close_all()
