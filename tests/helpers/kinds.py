"""The suite's slow kinds by path, and the pytest-xdist work unit each test belongs to.

Kinds come from a test's folder or file (tests/conftest.py adds the fixture-given `postgres`),
so a new file in tests/e2e/ is a browser test without anyone remembering to mark it. Under
`make test` (pytest -n 2 or 3, tests/helpers/workers.py) the tests of a grouped kind are one work
unit, run on one worker one after another: one Ray cluster, one wheel build, one local LLM
server at a time on 2 cores.
Everything else is one unit per module.

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
# One work unit each. The browser modules are not grouped: one group would put ~15 minutes of
# browser tests on one worker (measured slower, BENCHMARKS.md), so both workers run them, a
# module at a time.
GROUPED = ("ray", "install", "local_llm")


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


def files_of(kind: str, tests: Path) -> list[str]:
    """The test files under `tests` whose folder or name gives them `kind`, relative to its
    parent: `make test` runs the `serial` ones alone without collecting the whole suite."""
    found = (path.relative_to(tests.parent) for path in sorted(tests.rglob("test_*.py")))
    return [path.as_posix() for path in found if kind in path_kinds(PurePosixPath(path))]


if __name__ == "__main__":  # python -m tests.helpers.kinds serial
    import sys

    print(" ".join(files_of(sys.argv[1], Path(__file__).resolve().parents[1])))
