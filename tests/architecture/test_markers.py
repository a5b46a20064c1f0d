"""The slow kinds carry markers (issue 25, item 6), so `pytest -m "not browser"` (or not
local_llm, ray, install, postgres) leaves a kind out, and `make test`'s parallel run keeps one Ray
cluster, one wheel build and one local LLM server on one worker (one work unit each). The marks
come from tests/conftest.py by folder, file or fixture: a new file in tests/e2e/ is marked too."""

from __future__ import annotations

import json
import subprocess
import sys
from itertools import groupby
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests import conftest
from tests.helpers import ROOT
from tests.helpers.kinds import UNIT_SECONDS, files_of, queue_key, work_unit

KINDS = {"browser", "local_llm", "ray", "install", "postgres", "serial"}


def test_the_kinds_are_registered(pytestconfig: pytest.Config) -> None:
    registered = {line.split(":")[0].strip() for line in pytestconfig.getini("markers")}
    assert KINDS <= registered


# Runs several `pytest --collect-only` in one fresh process: pytest.main per argument list,
# each with its own stdout, so the test pays for importing the suite once, not per selection.
COLLECT_MANY = """
import contextlib, io, json, sys
import pytest
found = []
for args in json.loads(sys.argv[1]):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *args])
    found.append([int(code), [line for line in out.getvalue().splitlines() if "::" in line]])
print(json.dumps(found))
"""


PLACES = {"browser": "tests/e2e/test_smoke_browser.py", "install": "tests/install",
          "ray": "tests/sweeps/test_sweep_ray_loopback.py",
          "local_llm": "tests/providers/test_local_llm.py",
          "postgres": "tests/store/test_store_postgres.py"}
QUICK = "tests/shared/test_home.py"
# Folders and files enough to show the queue's order: a group, long and short modules, browser.
QUEUE_SAMPLE = ["tests/e2e", "tests/cli", "tests/providers/test_local_llm.py",
                "tests/engine/test_strategies.py"]
SELECTIONS = {
    **{f"{kind} chosen": ["-m", kind, place, QUICK] for kind, place in PLACES.items()},
    **{f"{kind} left": ["-m", f"not {kind}", place] for kind, place in PLACES.items()},
    "postgres variants": ["-m", "postgres", "tests/store/test_store.py"],
    "queue": QUEUE_SAMPLE,
}


@pytest.fixture(scope="module")
def collected() -> dict[str, list[str]]:
    """The test ids each of SELECTIONS (pytest arguments) collects, in order, in one subprocess."""
    names, selections = list(SELECTIONS), list(SELECTIONS.values())
    done = subprocess.run([sys.executable, "-c", COLLECT_MANY, json.dumps(selections)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    results = json.loads(done.stdout.splitlines()[-1])
    for (code, _), args in zip(results, selections, strict=True):
        assert code in (0, 5), (args, code)  # 5: nothing collected
    return {name: lines for name, (_, lines) in zip(names, results, strict=True)}


def test_each_slow_kind_is_selected_by_its_marker_and_left_out_without_it(
        collected: dict[str, list[str]]) -> None:
    for kind, place in PLACES.items():
        chosen, left = collected[f"{kind} chosen"], collected[f"{kind} left"]
        assert chosen and all(line.startswith(place) for line in chosen), (kind, chosen)
        assert left == [], kind


def test_a_store_test_is_marked_postgres_only_in_its_postgresql_variant(
        collected: dict[str, list[str]]) -> None:
    chosen = collected["postgres variants"]
    assert chosen and all("[postgresql" in line for line in chosen)


def test_the_queue_deals_browser_modules_last_and_the_longest_units_first(
        collected: dict[str, list[str]]) -> None:
    """Longest-processing-time-first, so both workers end close together; browser last (see
    tests/conftest.py). Each unit's tests stay together, in their module's order."""
    units = list(dict.fromkeys(work_unit(nodeid) for nodeid in collected["queue"]))
    assert units[:2] == ["local_llm", "tests/engine/test_strategies.py"]
    browser = [i for i, unit in enumerate(units) if unit.startswith("tests/e2e/")]
    assert browser == list(range(len(units) - len(browser), len(units)))  # all of them last
    assert units[browser[0]] == "tests/e2e/test_room_two_people.py"  # the longest browser unit
    first = {work_unit(nodeid): nodeid for nodeid in reversed(collected["queue"])}
    keys = [queue_key(first[unit]) for unit in units]
    assert keys == sorted(keys) and keys[0] == (False, -UNIT_SECONDS["local_llm"])
    in_order = [work_unit(nodeid) for nodeid in collected["queue"]]
    assert len(units) == len(list(groupby(in_order)))  # each unit's tests side by side


class _Config:
    """What pytest-xdist's scheduler reads of a config under `-n 2 --dist loadgroup`."""

    def __init__(self) -> None:
        self.option = SimpleNamespace(loadscopereorder=True)  # xdist's default

    def getvalue(self, name: str) -> object:
        return {"dist": "loadgroup", "tx": ["2*popen"], "numprocesses": 2}[name]


def test_the_parallel_run_keeps_each_slow_kind_in_one_work_unit_and_the_rest_per_module() -> None:
    """The scheduler `make test` gets (tests/conftest.py) asks `work_unit`: with pytest 9.2,
    xdist's own `xdist_group` marks silently stopped grouping (pytest-dev/pytest-xdist#1386)."""
    config = _Config()
    scheduler = conftest.pytest_xdist_make_scheduler(config, None)  # type: ignore[arg-type]
    assert config.option.loadscopereorder is False  # units go out in the order we give them
    split = scheduler._split_scope  # type: ignore[attr-defined]
    assert split("tests/sweeps/test_sweep_ray.py::test_a[sqlite]") == "ray"
    assert split("tests/ui/test_app_sweeps_ray.py::test_b") == "ray"
    assert split("tests/sweeps/test_sweep_ray_loopback.py::test_c") == "ray"
    assert split("tests/install/test_install.py::test_d") == "install"
    assert split("tests/install/test_packaging.py::test_e") == "install"
    assert split("tests/providers/test_local_llm.py::test_f") == "local_llm"
    assert split("tests/e2e/test_journey.py::test_g") == "tests/e2e/test_journey.py"
    assert split("tests/store/test_store.py::test_h[user@host]") == "tests/store/test_store.py"
    assert work_unit("tests/e2e/test_room_link.py::test_i") == "tests/e2e/test_room_link.py"


def test_serial_tests_are_marked_by_file_only() -> None:
    """`make test` runs the serial part by file (`python -m tests.helpers.kinds serial`), so a
    `serial` mark set by hand elsewhere would leave its test out of both parts."""
    serial = set(files_of("serial", ROOT / "tests"))
    assert serial == {"tests/store/test_store_cadence.py"}
    by_hand = [path for path in (ROOT / "tests").rglob("*.py") if path != Path(__file__)
               and "mark.serial" in path.read_text(encoding="utf-8")]
    assert by_hand == []


class _Node:
    """What xdist's scheduler calls on a worker."""

    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False
        self.sent: list[int] = []

    def send_runtest_some(self, indexes: list[int]) -> None:
        self.sent += indexes

    def shutdown(self) -> None:
        self.shutting_down = True


def test_one_worker_runs_the_local_llm_then_every_browser_module_the_other_the_rest() -> None:
    """The scheduler run to the end on two fake workers that finish a test each in turn."""
    tests = ["tests/providers/test_local_llm.py::test_a",
             "tests/providers/test_local_llm.py::test_b", "tests/engine/test_strategies.py::test_c",
             "tests/ui/test_app.py::test_d", "tests/ui/test_app.py::test_e",
             "tests/cli/test_cli.py::test_f",
             "tests/e2e/test_room_two_people.py::test_g", "tests/e2e/test_journey.py::test_h",
             "tests/e2e/test_journey.py::test_i", "tests/e2e/test_smoke_browser.py::test_j"]
    scheduler = conftest.pytest_xdist_make_scheduler(_Config(), None)  # type: ignore[arg-type]
    first, second = _Node("gw0"), _Node("gw1")
    for node in (first, second):
        scheduler.add_node(node)  # type: ignore[attr-defined]
        scheduler.add_node_collection(node, tests)  # type: ignore[attr-defined]
    scheduler.schedule()  # type: ignore[attr-defined]
    done = {first: 0, second: 0}
    while any(done[node] < len(node.sent) for node in done):
        for node in done:
            if done[node] < len(node.sent):
                scheduler.mark_test_complete(node, node.sent[done[node]])  # type: ignore[attr-defined]
                done[node] += 1
    units = {node: list(dict.fromkeys(work_unit(tests[i]) for i in node.sent)) for node in done}
    assert units[first] == ["local_llm", "tests/e2e/test_room_two_people.py",
                            "tests/e2e/test_journey.py"]
    assert units[second] == ["tests/engine/test_strategies.py", "tests/ui/test_app.py",
                             "tests/cli/test_cli.py", "tests/e2e/test_smoke_browser.py"]
    assert sorted(first.sent + second.sent) == list(range(len(tests)))  # each test once
    assert first.shutting_down and second.shutting_down
    assert scheduler.tests_finished  # type: ignore[attr-defined]
