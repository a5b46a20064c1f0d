"""The slow kinds carry markers (issue 25, item 6), so `pytest -m "not browser"` (or not
local_llm, ray, install, postgres) leaves a kind out, and `make test`'s parallel run keeps one Ray
cluster, one wheel build and one local LLM server on one worker (their xdist groups). The marks
come from tests/conftest.py by folder, file or fixture: a new file in tests/e2e/ is marked too."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers import ROOT

KINDS = {"browser", "local_llm", "ray", "install", "postgres", "serial"}


def test_the_kinds_are_registered(pytestconfig: pytest.Config) -> None:
    registered = {line.split(":")[0].strip() for line in pytestconfig.getini("markers")}
    assert KINDS <= registered


def _collected(*args: str) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:cacheprovider", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode in (0, 5), done.stdout[-2000:] + done.stderr[-2000:]
    return [line for line in done.stdout.splitlines() if "::" in line]


def test_each_slow_kind_is_selected_by_its_marker_and_left_out_without_it() -> None:
    places = {"browser": "tests/e2e/test_smoke_browser.py", "install": "tests/install",
              "ray": "tests/sweeps/test_sweep_ray_loopback.py",
              "local_llm": "tests/providers/test_local_llm.py",
              "postgres": "tests/store/test_store_postgres.py"}
    quick = "tests/shared/test_home.py"
    for kind, place in places.items():
        chosen = _collected("-m", kind, place, quick)
        assert chosen and all(line.startswith(place) for line in chosen), (kind, chosen)
        assert _collected("-m", f"not {kind}", place) == [], kind


def test_a_store_test_is_marked_postgres_only_in_its_postgresql_variant() -> None:
    chosen = _collected("-m", "postgres", "tests/store/test_store.py")
    assert chosen and all("[postgresql" in line for line in chosen)
