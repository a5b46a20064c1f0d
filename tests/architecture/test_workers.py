"""`make test`'s worker count (tests/helpers/workers.py): one per core, one more where the cores
are fast; a slow or busy machine gets no extra worker."""

from __future__ import annotations

from tests.helpers.workers import FAST_CORE_S, workers, yardstick


def test_fast_cores_get_one_worker_more_than_they_are() -> None:
    assert workers(2, FAST_CORE_S) == 3
    assert workers(2, FAST_CORE_S / 2) == 3


def test_slow_or_busy_cores_get_one_worker_each() -> None:
    assert workers(2, FAST_CORE_S * 1.01) == 2
    assert workers(4, 1.0) == 4
    assert workers(0, 1.0) == 1  # a machine that reports no cores still runs the suite


def test_the_yardstick_times_its_loop() -> None:
    took = yardstick(rounds=1)
    assert 0 < took < 10
