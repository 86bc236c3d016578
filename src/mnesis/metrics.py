"""Prometheus metrics (extra ``metrics``): the ``lcm_*`` series of the specification.

Attach sessions to a :class:`PrometheusMetrics` and the series follow their events;
``mnesis mcp --http`` serves them at ``/metrics``, or expose them with
``prometheus_client.start_http_server`` or your web framework::

    metrics = PrometheusMetrics()
    metrics.attach(session)
    metrics.observe(engine)                      # a bare RetrievalEngine, e.g. the MCP server's
    metrics.record_integrity_report(await IntegrityChecker(store).run())

Series as exposed on the wire (labels in braces; prometheus_client adds ``_total`` to
counters, ``_bucket``/``_sum``/``_count`` to histograms, and a ``_created`` timestamp
next to each):

* ``lcm_context_tokens_current`` {session}: estimated tokens of the current context view
* ``lcm_context_tokens_total``: tokens appended to contexts (a counter)
* ``lcm_compaction_runs_total`` {outcome}: ``committed``, ``noop`` or ``failed``
* ``lcm_summaries_created_total`` {kind}: ``leaf`` or ``condensed``
* ``lcm_expand_latency_ms`` / ``lcm_search_latency_ms``: histograms
* ``lcm_integrity_failures_total`` {kind}: violations reported by the checker
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mnesis.errors import MissingDependencyError
from mnesis.events.bus import MnesisEvent

if TYPE_CHECKING:
    from mnesis.integrity.checker import IntegrityReport
    from mnesis.retrieval.engine import RetrievalEngine
    from mnesis.session import MnesisSession

__all__ = ["PrometheusMetrics", "count_integrity_report", "registry_or_default", "shared_series"]

_LATENCY_BUCKETS_MS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000)


class PrometheusMetrics:
    """The ``lcm_*`` metrics, registered on ``registry`` (default: prometheus' global one)."""

    def __init__(self, registry: Any = None) -> None:
        reg = registry_or_default(registry)
        from prometheus_client import Counter, Gauge

        self.registry: Any = reg
        """The ``prometheus_client`` registry the series live on."""
        self.context_tokens = Gauge(
            "lcm_context_tokens_current",
            "Estimated tokens of the current context view",
            ["session"],
            registry=reg,
        )
        # Counter names without "_total": prometheus_client appends it on the wire.
        self.context_tokens_total = Counter(
            "lcm_context_tokens", "Tokens appended to session contexts", registry=reg
        )
        self.compaction_runs, self.integrity_failures = shared_series(reg)
        self.summaries_created = Counter(
            "lcm_summaries_created", "Summaries created by kind", ["kind"], registry=reg
        )
        self.expand_latency = _latency_histogram("lcm_expand_latency_ms", "expand", reg)
        self.search_latency = _latency_histogram("lcm_search_latency_ms", "grep", reg)
        self._seen_tokens: dict[str, int] = {}

    def attach(self, session: MnesisSession) -> None:
        """Follow ``session``'s events and retrieval calls."""
        session_id = session.id
        self._seen_tokens[session_id] = session.context_tokens
        self.context_tokens.labels(session=session_id).set(session.context_tokens)

        def on_message(event: MnesisEvent, payload: dict[str, Any]) -> None:
            self._update_context(session)

        def on_compaction(event: MnesisEvent, payload: dict[str, Any]) -> None:
            if event == MnesisEvent.COMPACTION_FAILED:
                self.compaction_runs.labels(outcome="failed").inc()
                return
            result = payload.get("result") or {}
            level = int(result.get("level_used") or 0)
            self.compaction_runs.labels(outcome="committed" if level else "noop").inc()
            condensed = int(result.get("condensed_count") or 0)
            leaves = max(0, int(result.get("rounds") or 0) - condensed)
            if leaves:
                self.summaries_created.labels(kind="leaf").inc(leaves)
            if condensed:
                self.summaries_created.labels(kind="condensed").inc(condensed)
            if level:
                # The session refreshes its own figure after the event; the result has it.
                after = int(result.get("tokens_after") or 0)
                self._seen_tokens[session_id] = after
                self.context_tokens.labels(session=session_id).set(after)

        session.subscribe(MnesisEvent.MESSAGE_CREATED, on_message)
        session.subscribe(MnesisEvent.COMPACTION_COMPLETED, on_compaction)
        session.subscribe(MnesisEvent.COMPACTION_FAILED, on_compaction)
        self.observe(session.retrieval)

    def observe(self, engine: RetrievalEngine) -> None:
        """Time ``engine``'s searches and expansions (``lcm_search/expand_latency_ms``)."""
        if self._on_retrieval not in engine.observers:
            engine.observers.append(self._on_retrieval)

    def _update_context(self, session: MnesisSession) -> None:
        now = session.context_tokens
        before = self._seen_tokens.get(session.id, 0)
        if now > before:
            self.context_tokens_total.inc(now - before)
        self._seen_tokens[session.id] = now
        self.context_tokens.labels(session=session.id).set(now)

    def _on_retrieval(self, operation: str, milliseconds: float) -> None:
        histogram = self.search_latency if operation == "grep" else self.expand_latency
        histogram.observe(milliseconds)

    def exposition(self) -> tuple[bytes, str]:
        """The registry in the Prometheus text format, and its content type (``/metrics``)."""
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return generate_latest(self.registry), CONTENT_TYPE_LATEST

    def record_integrity_report(self, report: IntegrityReport) -> None:
        """Count the violations of an integrity check."""
        count_integrity_report(self.integrity_failures, report)


def _latency_histogram(name: str, operation: str, registry: Any) -> Any:
    """A histogram of ``operation``'s latency in milliseconds, on ``registry``."""
    from prometheus_client import Histogram

    return Histogram(
        name,
        f"{operation} latency in milliseconds",
        buckets=_LATENCY_BUCKETS_MS,
        registry=registry,
    )


def registry_or_default(registry: Any) -> Any:
    """``registry``, or prometheus' global one when it is ``None``.

    Raises :class:`~mnesis.errors.MissingDependencyError` when ``prometheus_client``
    (the extra ``metrics``) is not installed."""
    try:
        from prometheus_client import REGISTRY
    except ImportError as exc:
        raise MissingDependencyError("Prometheus metrics", "metrics") from exc
    return registry if registry is not None else REGISTRY


def shared_series(registry: Any) -> tuple[Any, Any]:
    """``lcm_compaction_runs`` {outcome} and ``lcm_integrity_failures`` {kind} on
    ``registry``: the series both :class:`PrometheusMetrics` and a worker's
    :class:`~mnesis.workers.metrics.WorkerMetrics` export, under the same names.

    Needs ``prometheus_client`` (the caller has checked it is installed)."""
    from prometheus_client import Counter

    compaction_runs = Counter(
        "lcm_compaction_runs", "Compaction runs by outcome", ["outcome"], registry=registry
    )
    integrity_failures = Counter(
        "lcm_integrity_failures", "Integrity violations found", ["kind"], registry=registry
    )
    return compaction_runs, integrity_failures


def count_integrity_report(integrity_failures: Any, report: IntegrityReport) -> None:
    """Add the violations of ``report`` to ``lcm_integrity_failures``, by kind."""
    for kind, count in report.by_kind().items():
        integrity_failures.labels(kind=kind).inc(count)
