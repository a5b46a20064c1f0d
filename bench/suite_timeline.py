"""Where the test suite's wall time goes (issue 25, item 6): a pytest plugin that writes each
test's start, end and CPU, and a report of those files.

    SUITE_TIMELINE=/tmp/tl PYTEST_ADDOPTS="-p bench.suite_timeline" make test
    SUITE_TIMELINE=/tmp/tl .venv/bin/python -m pytest -p bench.suite_timeline
    .venv/bin/python -m bench.suite_timeline /tmp/tl

(`python -m pytest` runs from the checkout, so `bench` imports without a PYTHONPATH, which would
also reach the install tests' fresh environments.)
The plugin appends one JSON line per test to `$SUITE_TIMELINE/timeline-<worker>.jsonl` (the
xdist worker's name, or `main`): its id, wall start and end, and the CPU the test process spent
(`self`) and reaped from its children (`children`: CLI runs, servers started and stopped within
the test or its module) meanwhile. The report gives each process's span and busy time, when each
worker ended, and the longest work units (tests/helpers/kinds.py), with the CPU of each.
Measurement only: nothing here asserts on time.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest


def _cpu() -> tuple[float, float]:
    own, children = (resource.getrusage(who) for who in
                     (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Around a test's setup, call and teardown, in the process that runs it (under xdist the
    controller only sees reports, so it records nothing)."""
    start, (own, children) = time.time(), _cpu()
    try:
        return (yield)
    finally:
        folder = os.environ.get("SUITE_TIMELINE")
        if folder:
            own_now, children_now = _cpu()
            row = {"id": item.nodeid, "start": start, "end": time.time(),
                   "self": own_now - own, "children": children_now - children}
            worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
            with open(Path(folder) / f"timeline-{worker}.jsonl", "a", encoding="utf-8") as out:
                out.write(json.dumps(row) + "\n")


def report(folder: Path, most: int = 25) -> str:
    """Each process's span, busy time and end; the `most` longest work units with their CPU."""
    from tests.helpers.kinds import work_unit

    rows = {path.stem.removeprefix("timeline-"): [json.loads(line) for line in
                                                  path.read_text(encoding="utf-8").splitlines()]
            for path in sorted(folder.glob("timeline-*.jsonl"))}
    if not any(rows.values()):
        raise SystemExit(f"no timeline-*.jsonl rows in {folder}: run pytest with "
                         f"SUITE_TIMELINE={folder} and -p bench.suite_timeline first")
    first = min(row["start"] for found in rows.values() for row in found)
    lines = ["process | tests | ends at (s) | busy (s) | CPU self + children (s)",
             "---|---:|---:|---:|---:"]
    units: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for worker, found in rows.items():
        busy = sum(row["end"] - row["start"] for row in found)
        cpu = sum(row["self"] + row["children"] for row in found)
        end = max(row["end"] for row in found) - first
        lines.append(f"{worker} | {len(found)} | {end:.0f} | {busy:.0f} | {cpu:.0f}")
        for row in found:
            unit = units[work_unit(row["id"])]
            unit[0] += row["end"] - row["start"]
            unit[1] += row["self"] + row["children"]
    lines += ["", "work unit | wall (s) | CPU (s)", "---|---:|---:"]
    longest = sorted(units.items(), key=lambda item: -item[1][0])[:most]
    lines += [f"{unit} | {wall:.0f} | {cpu:.0f}" for unit, (wall, cpu) in longest]
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(Path(sys.argv[1])))
