"""The registry of runs executing in this process: one live run per
(location, run_id), released however the run ends."""

from __future__ import annotations

import pytest

from mnesis import InvalidArgumentError
from mnesis.operators.active_runs import ActiveRuns


def test_a_run_is_live_only_while_held() -> None:
    runs = ActiveRuns()
    with runs.hold("/db/a", "run_1"):
        assert runs.is_active("/db/a", "run_1")
    assert not runs.is_active("/db/a", "run_1")


def test_a_second_hold_of_the_same_run_is_refused_and_keeps_the_first() -> None:
    runs = ActiveRuns()
    with runs.hold("/db/a", "run_1"):
        with (
            pytest.raises(InvalidArgumentError, match="already running"),
            runs.hold("/db/a", "run_1"),
        ):
            pass
        assert runs.is_active("/db/a", "run_1")
    assert not runs.is_active("/db/a", "run_1")


def test_the_same_run_id_on_another_location_is_independent() -> None:
    runs = ActiveRuns()
    with runs.hold("/db/a", "run_1"), runs.hold("/db/b", "run_1"), runs.hold("/db/a", "run_2"):
        assert runs.is_active("/db/b", "run_1")


def test_a_run_that_raises_is_released() -> None:
    runs = ActiveRuns()
    with pytest.raises(RuntimeError), runs.hold("/db/a", "run_1"):
        raise RuntimeError("boom")
    with runs.hold("/db/a", "run_1"):
        assert runs.is_active("/db/a", "run_1")
