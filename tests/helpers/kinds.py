"""The suite's slow kinds by path, and the pytest-xdist work unit each test belongs to.

Kinds come from a test's folder or file (tests/conftest.py adds the fixture-given `postgres`),
so a new file in tests/e2e/ is a browser test without anyone remembering to mark it. Under
`make test` (pytest -n 2) the tests of a grouped kind are one work unit, run on one worker one
after another: one Ray cluster, one wheel build, one local LLM server at a time on 2 cores.
Everything else is one unit per module. Units are dealt out longest first (`queue_key`).

Why by path and not by xdist's `xdist_group` mark: pytest-xdist 3.8 groups by appending the
group to each test's node id, which pytest 9.2 no longer lets a plugin change
(pytest-dev/pytest-xdist#1386), so the marks silently stopped grouping anything. The scheduler
in tests/conftest.py asks `work_unit` instead.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

FOLDER_MARKS = {"e2e": "browser", "install": "install"}
FILE_MARKS = {
    "test_local_llm.py": "local_llm",
    "test_sweep_ray.py": "ray", "test_sweep_ray_loopback.py": "ray",
    "test_app_sweeps_ray.py": "ray",
    # It checks how far the store lags a busy chat: `make test` runs it alone, before the
    # parallel part, where a second busy worker would make the lag the machine's, not the store's.
    "test_store_cadence.py": "serial",
}
# One work unit each. The browser modules are one unit each, not a group: the scheduler in
# tests/conftest.py gives them to one worker, longest first, and lets the other take the
# shortest ones left once it has nothing else to do.
GROUPED = ("ray", "install", "local_llm")
# Seconds the longest work units took in a fresh clone's `make test` (2 workers, 2026-12-05).
# They only order the queue: longest first within each part (browser modules last), so the two
# workers end close together (longest-processing-time-first). A unit not listed counts as short;
# a stale figure costs a little balance, never a result.
UNIT_SECONDS = {
    "local_llm": 211, "install": 86, "ray": 70,
    "tests/engine/test_strategies.py": 86, "tests/sweeps/test_sweep_ownership.py": 36,
    "tests/providers/test_deployments.py": 31, "tests/ui/test_app.py": 25,
    "tests/ui/test_app_sweeps.py": 24, "tests/exports/test_safe_output.py": 22,
    "tests/ui/test_ownership.py": 22, "tests/e2e/test_room_two_people.py": 119,
    "tests/e2e/test_full_journey.py": 66, "tests/e2e/test_sweep_views.py": 65,
    "tests/e2e/test_sweep_status.py": 44, "tests/e2e/test_login.py": 42,
    "tests/e2e/test_two_sessions.py": 40, "tests/e2e/test_slugs_and_labels.py": 38,
    "tests/e2e/test_page_defects.py": 33, "tests/e2e/test_room_selector.py": 30,
    "tests/e2e/test_run_defects.py": 27, "tests/e2e/test_room_link.py": 27,
    "tests/e2e/test_run_views.py": 27, "tests/e2e/test_sweep_ray_workers.py": 26,
    "tests/e2e/test_untrusted_output.py": 25, "tests/e2e/test_agent_keys.py": 24,
    "tests/e2e/test_streaming.py": 23, "tests/e2e/test_journey.py": 21,
}


def path_kinds(path: PurePosixPath) -> set[str]:
    """The slow kinds a test file's folder and name give it."""
    kinds = {FOLDER_MARKS[path.parent.name]} if path.parent.name in FOLDER_MARKS else set()
    if path.name in FILE_MARKS:
        kinds.add(FILE_MARKS[path.name])
    return kinds


def work_unit(nodeid: str) -> str:
    """The xdist work unit of a test id: its grouped kind's name, else its module's path."""
    module = nodeid.split("::", 1)[0]
    grouped = sorted(path_kinds(PurePosixPath(module)) & set(GROUPED))
    return grouped[0] if grouped else module


# The browser worker's first unit (tests/conftest.py): the longest non-browser unit, whose
# llama.cpp server keeps both cores busy, best beside the other worker's lighter tests.
BROWSER_WORKER_FIRST = "local_llm"


def is_browser_unit(unit: str) -> bool:
    """A work unit of browser tests (a module under tests/e2e/)."""
    return "browser" in path_kinds(PurePosixPath(unit.split("::", 1)[0]))


def queue_key(nodeid: str) -> tuple[bool, float]:
    """Where a test's unit goes in the parallel run's queue: browser modules last (see
    tests/conftest.py), longest units first within each part."""
    module = PurePosixPath(nodeid.split("::", 1)[0])
    return "browser" in path_kinds(module), -UNIT_SECONDS.get(work_unit(nodeid), 0)


def files_of(kind: str, tests: Path) -> list[str]:
    """The test files under `tests` whose folder or name gives them `kind`, relative to its
    parent: `make test` runs the `serial` ones alone without collecting the whole suite."""
    found = (path.relative_to(tests.parent) for path in sorted(tests.rglob("test_*.py")))
    return [path.as_posix() for path in found if kind in path_kinds(PurePosixPath(path))]


if __name__ == "__main__":  # python -m tests.helpers.kinds serial
    import sys

    print(" ".join(files_of(sys.argv[1], Path(__file__).resolve().parents[1])))
