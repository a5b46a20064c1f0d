"""The package's requirement files declare compatible ranges (issue 23 item 4): the floor is the
vetted version that constraints.txt pins exactly, the next major is excluded, so the package
installs beside other versions while `make` and CI keep the vetted set. Why here, not in
tests/install: reading files takes milliseconds; the install test builds and installs a wheel."""

from __future__ import annotations

import re

import pytest

from tests.helpers import ROOT

# What pip reads for the package's metadata (pyproject's dynamic dependencies). The Ray extra
# stays pinned (a cluster needs the same Ray everywhere); litellm is pinned (requirements.txt).
RANGED = ("requirements.txt", "requirements-dashboard.txt", "requirements-parquet.txt",
          "requirements-traces.txt", "requirements-mlflow.txt")
EXACT = {"litellm[mcp]"}
OLDER_FLOOR = {"pandas"}  # tests/install/test_install.py runs the engine beside this floor
RANGE = re.compile(r"^(?P<name>[A-Za-z0-9_.\-\[\]]+)>=(?P<floor>[0-9.]+),<(?P<major>\d+)$")


def pins() -> dict[str, str]:
    lines = (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
    found = (line.split("==") for line in lines if "==" in line and not line.startswith("#"))
    return {name.strip().lower(): version.strip() for name, version in found}


def version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def requirements(name: str) -> list[str]:
    lines = (ROOT / name).read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


@pytest.mark.parametrize("name", RANGED)
def test_each_requirement_is_a_range_from_the_vetted_pin_to_the_next_major(name: str) -> None:
    vetted = pins()
    for line in requirements(name):
        if line.split("==")[0] in EXACT:
            continue
        match = RANGE.match(line)
        assert match, f"{name}: {line!r} is not 'package>=vetted,<next major'"
        package = match["name"].split("[")[0].lower()
        assert package in vetted, f"{name}: {package} has no pin in constraints.txt"
        floor, pin = version(match["floor"]), version(vetted[package])
        # The floor is the vetted pin (pandas': the older release the install test runs).
        assert floor == pin or package in OLDER_FLOOR, f"{name}: {line!r} vs {pin}"
        assert floor <= pin and int(match["major"]) == floor[0] + 1, f"{name}: {line!r}"
