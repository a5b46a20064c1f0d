"""The slow kinds carry markers (issue 25, item 6), so `pytest -m "not browser"` (or not
local_llm, ray, install, postgres) leaves a kind out, and `make test`'s parallel run keeps the
Ray modules on one worker (one work unit: one Ray cluster at a time). The marks
come from tests/conftest.py by folder, file or fixture: a new file in tests/e2e/ is marked too."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests import conftest
from tests.helpers import ROOT
from tests.helpers.kinds import work_unit

KINDS = {"browser", "local_llm", "ray", "install", "postgres"}


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
SELECTIONS = {
    **{f"{kind} chosen": ["-m", kind, place, QUICK] for kind, place in PLACES.items()},
    **{f"{kind} left": ["-m", f"not {kind}", place] for kind, place in PLACES.items()},
    "postgres variants": ["-m", "postgres", "tests/store/test_store.py"],
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


class _Config:
    """What pytest-xdist's scheduler reads of a config under `-n 2 --dist loadgroup`."""

    def getvalue(self, name: str) -> object:
        return {"dist": "loadgroup", "tx": ["2*popen"], "numprocesses": 2}[name]


def test_the_parallel_run_keeps_each_slow_kind_in_one_work_unit_and_the_rest_per_module() -> None:
    """The scheduler `make test` gets (tests/conftest.py) asks `work_unit`: with pytest 9.2,
    xdist's own `xdist_group` marks silently stopped grouping (pytest-dev/pytest-xdist#1386)."""
    scheduler = conftest.pytest_xdist_make_scheduler(_Config(), None)  # type: ignore[arg-type]
    split = scheduler._split_scope  # type: ignore[attr-defined]
    assert split("tests/sweeps/test_sweep_ray.py::test_a[sqlite]") == "ray"
    assert split("tests/ui/test_app_sweeps_ray.py::test_b") == "ray"
    assert split("tests/sweeps/test_sweep_ray_loopback.py::test_c") == "ray"
    assert split("tests/install/test_install.py::test_d") == "tests/install/test_install.py"
    assert split("tests/providers/test_local_llm.py::test_f") == (
        "tests/providers/test_local_llm.py")
    assert split("tests/e2e/test_journey.py::test_g") == "tests/e2e/test_journey.py"
    assert split("tests/store/test_store.py::test_h[user@host]") == "tests/store/test_store.py"
    assert work_unit("tests/e2e/test_room.py::test_i") == "tests/e2e/test_room.py"

