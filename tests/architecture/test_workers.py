"""`make test`'s worker count (tests/helpers/workers.py): one per core, one more where the cores
are fast; a slow or busy machine gets no extra worker."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.helpers import workers as workers_module
from tests.helpers.workers import FAST_CORE_S, workers, yardstick


def test_fast_cores_get_one_worker_more_than_they_are() -> None:
    assert workers(2, FAST_CORE_S) == 3
    assert workers(2, FAST_CORE_S / 2) == 3


def test_slow_or_busy_cores_get_one_worker_each() -> None:
    assert workers(2, FAST_CORE_S * 1.01) == 2
    assert workers(4, 1.0) == 4
    assert workers(0, 1.0) == 1  # a machine that reports no cores still runs the suite


def test_the_yardstick_is_the_best_of_its_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    # an injected clock: rounds of 0.5 s, 0.2 s and 0.3 s; the least disturbed one counts
    ticks = iter([10.0, 10.5, 20.0, 20.2, 30.0, 30.3])
    monkeypatch.setattr(workers_module, "time", SimpleNamespace(perf_counter=lambda: next(ticks)))
    assert yardstick(rounds=3) == pytest.approx(0.2)
    assert next(ticks, None) is None  # each round read the clock twice, at its start and end
