"""The suite's slow kinds by path, and the pytest-xdist work unit each test belongs to.

Kinds come from a test's folder or file (tests/conftest.py adds the fixture-given `postgres`),
so a new file in tests/e2e/ is a browser test without anyone remembering to mark it. Under
`make test` (pytest -n 2 or 3, tests/helpers/workers.py) the Ray tests, in three modules, are
one work unit, run on one worker one after another: one Ray cluster at a time on 2 cores.
Everything else is one unit per module (the wheel build and the local LLM server are each one
module's fixture).

Why by path and not by xdist's `xdist_group` mark: pytest-xdist 3.8 groups by appending the
group to each test's node id, which pytest 9.2 no longer lets a plugin change
(pytest-dev/pytest-xdist#1386), so the marks silently stopped grouping anything. The scheduler
in tests/conftest.py asks `work_unit` instead.
"""

from __future__ import annotations

from pathlib import PurePosixPath

FOLDER_MARKS = {"e2e": "browser", "install": "install"}
FILE_MARKS = {
    "test_local_llm.py": "local_llm",
    "test_sweep_ray.py": "ray", "test_sweep_ray_loopback.py": "ray",
    "test_app_sweeps_ray.py": "ray",
}
# One work unit for all of a kind's modules. The browser modules are not grouped: one group would
# put ~15 minutes of browser tests on one worker (measured slower, BENCHMARKS.md), so both
# workers run them, a module at a time.
GROUPED = ("ray",)


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

