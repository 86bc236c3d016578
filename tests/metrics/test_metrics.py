"""The lcm_* Prometheus series follow a real session (extra ``metrics``)."""

from __future__ import annotations

import pytest

from mnesis import MnesisSession, StorePool
from mnesis.integrity import IntegrityChecker, IntegrityReport, ViolationKind
from mnesis.integrity.checker import Violation
from tests.compacted import EXTRACTIVE_32K, compact_now, record_steps

prometheus_client = pytest.importorskip("prometheus_client")

from prometheus_client import CollectorRegistry  # noqa: E402

from mnesis.metrics import PrometheusMetrics  # noqa: E402
from mnesis.workers.metrics import WorkerMetrics  # noqa: E402


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


def _report(*kinds: ViolationKind) -> IntegrityReport:
    return IntegrityReport(
        violations=[
            Violation(
                kind=k, session_id="sess_1", object_id=f"obj_{i}", detail="x", repairable=False
            )
            for i, k in enumerate(kinds)
        ]
    )


class TestSharedSeries:
    def test_a_worker_exports_the_compaction_and_integrity_series_of_a_session_process(
        self,
    ) -> None:
        lost, cycle = ViolationKind.LOST_FROM_VIEW, ViolationKind.DAG_CYCLE
        worker_registry, session_registry = CollectorRegistry(), CollectorRegistry()
        worker = WorkerMetrics(worker_registry)
        worker.compaction("committed", 0.5)
        worker.integrity(_report(lost, lost, cycle))
        PrometheusMetrics(session_registry).record_integrity_report(_report(lost, lost, cycle))
        assert _value(worker_registry, "lcm_compaction_runs_total", outcome="committed") == 1
        for registry in (worker_registry, session_registry):
            assert _value(registry, "lcm_integrity_failures_total", kind=lost.value) == 2
            assert _value(registry, "lcm_integrity_failures_total", kind=cycle.value) == 1
