"""A worker's Prometheus series (extra ``metrics``), served on ``--metrics-port``.

* ``lcm_worker_jobs_total`` {task, outcome}: jobs finished (``succeeded`` / ``failed``)
* ``lcm_compaction_runs_total`` {outcome}: ``committed``, ``noop`` (same series as
  :mod:`mnesis.metrics`)
* ``lcm_worker_compaction_seconds``: duration of compaction jobs (a histogram)
* ``lcm_integrity_failures_total`` {kind}: violations found by integrity jobs
* ``lcm_worker_stalled_jobs_recovered_total``: jobs of dead workers put back in the queue
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mnesis.metrics import count_integrity_report, registry_or_default, shared_series

if TYPE_CHECKING:
    from mnesis.integrity.checker import IntegrityReport

__all__ = ["WorkerMetrics", "serve_metrics"]

_SECONDS_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


class WorkerMetrics:
    """The series of one worker process (on ``registry``, default prometheus' global one)."""

    def __init__(self, registry: Any = None) -> None:
        reg = registry_or_default(registry)
        from prometheus_client import Counter, Histogram

        self.jobs = Counter(
            "lcm_worker_jobs",
            "Jobs finished by task and outcome",
            ["task", "outcome"],
            registry=reg,
        )
        self.compaction_runs, self.integrity_failures = shared_series(reg)
        self.compaction_seconds = Histogram(
            "lcm_worker_compaction_seconds",
            "Duration of compaction jobs",
            buckets=_SECONDS_BUCKETS,
            registry=reg,
        )
        self.stalled_recovered = Counter(
            "lcm_worker_stalled_jobs_recovered",
            "Jobs of dead workers put back in the queue",
            registry=reg,
        )

    def job(self, task: str, outcome: str) -> None:
        """Count a finished job."""
        self.jobs.labels(task=task, outcome=outcome).inc()

    def compaction(self, outcome: str, seconds: float) -> None:
        """Count a compaction job and its duration."""
        self.compaction_runs.labels(outcome=outcome).inc()
        self.compaction_seconds.observe(seconds)

    def integrity(self, report: IntegrityReport) -> None:
        """Count the violations of an integrity job."""
        count_integrity_report(self.integrity_failures, report)


def serve_metrics(port: int, address: str = "0.0.0.0") -> WorkerMetrics:
    """Register the worker series and serve ``/metrics`` on ``address:port``."""
    metrics = WorkerMetrics()
    from prometheus_client import start_http_server

    start_http_server(port, addr=address)
    return metrics
