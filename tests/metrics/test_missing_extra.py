"""Without ``prometheus_client`` (the extra ``metrics``) both metric sets say which extra to
install, as a typed error, instead of an ImportError."""

from __future__ import annotations

import sys

import pytest

from mnesis.errors import MissingDependencyError
from mnesis.metrics import PrometheusMetrics, registry_or_default
from mnesis.workers.metrics import WorkerMetrics


@pytest.fixture
def without_prometheus(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules makes ``import prometheus_client`` raise ImportError.
    monkeypatch.setitem(sys.modules, "prometheus_client", None)


@pytest.mark.usefixtures("without_prometheus")
def test_session_metrics_name_the_extra() -> None:
    with pytest.raises(MissingDependencyError, match="metrics"):
        PrometheusMetrics()


@pytest.mark.usefixtures("without_prometheus")
def test_worker_metrics_name_the_extra() -> None:
    with pytest.raises(MissingDependencyError, match="metrics"):
        WorkerMetrics()


def test_a_given_registry_is_kept() -> None:
    pytest.importorskip("prometheus_client")
    from prometheus_client import REGISTRY, CollectorRegistry

    registry = CollectorRegistry()
    assert registry_or_default(registry) is registry
    assert registry_or_default(None) is REGISTRY
