"""The Ray executor without a cluster: CPUs per cell (issue 24) from spec, CLI and page, checked in
one line; a failed Ray start (any exception ray.init raises, from a stand-in `ray`) is one line
naming the fix (issue 44). The real cluster: tests/sweeps/test_sweep_ray.py."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

from groupchat_core import ConfigError
from groupchat_core.cli import main
from groupchat_core.sweeps import RayExecutor, parse_sweep
from groupchat_ui.kit import jobs as job_registry
from groupchat_ui.sweeps import logic
from tests.helpers.app_helpers import goto, new_app
from tests.helpers.cli import run_cli

AGENTS = [{"agent_name": n, "system_prompt": "p", "model_name": "sim/balanced"}
          for n in ("Pro", "Con")]
BASE = {"name": "cpus", "base": {"max_loops": 2, "agents": AGENTS},
        "grid": {"threshold": [0.3, 0.5]}, "tasks": ["Q?"], "bid_cache": False}
pytestmark = pytest.mark.usefixtures("fresh_engines")


def spec_file(tmp_path: Path, **changes: object) -> str:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({**BASE, **changes}))
    return str(path)


def test_the_spec_takes_a_fraction_and_keeps_it_through_a_round_trip():
    spec = parse_sweep({**BASE, "cpus_per_cell": 0.25})
    assert spec.cpus_per_cell == 0.25
    assert parse_sweep(spec.to_data()).cpus_per_cell == 0.25
    assert parse_sweep({**BASE, "cpus_per_cell": 64}).cpus_per_cell == 64.0
    plain = parse_sweep(BASE)
    assert plain.cpus_per_cell is None and "cpus_per_cell" not in plain.to_data()
    assert spec.same_cells(plain)  # where cells run does not change which cells there are


@pytest.mark.parametrize("value", [0, -1, 64.5, float("nan"), float("inf"), "x", True])
def test_the_spec_refuses_a_value_out_of_range_in_one_line(value):
    with pytest.raises(ConfigError) as caught:
        parse_sweep({**BASE, "cpus_per_cell": value})
    message = str(caught.value)
    assert "cpus_per_cell must be a number above 0 and at most 64" in message
    assert "\n" not in message


def test_the_executor_refuses_a_value_out_of_range(sqlite_store):
    with pytest.raises(ConfigError, match="above 0 and at most 64"):
        RayExecutor(sqlite_store, cpus_per_cell=0)
    assert RayExecutor(sqlite_store, cpus_per_cell=0.5).cpus_per_cell == 0.5


RAY = ["--executor", "ray", "--cpus-per-cell"]


@pytest.mark.parametrize(("changes", "argv", "said"), [
    ({}, [*RAY, "0"], "--cpus-per-cell: must be a number above 0"),
    ({}, [*RAY, "65"], "and at most 64"),
    ({}, [*RAY, "nan"], "--cpus-per-cell: must be a number"),
    ({}, ["--cpus-per-cell", "0.5"], "--cpus-per-cell only applies with --executor ray"),
    ({}, [*RAY, "lots"], "--cpus-per-cell: invalid float value"),
    ({"cpus_per_cell": 100}, ["--quiet"], "cpus_per_cell must be a number above 0 and at most 64"),
])
def test_the_cli_flag_and_a_spec_out_of_range_are_one_line(tmp_path, capsys, monkeypatch,
                                                             changes, argv, said):
    monkeypatch.setenv("GROUPCHAT_HOME", str(tmp_path))
    monkeypatch.delenv("GROUPCHAT_DB", raising=False)
    assert main(["sweep", spec_file(tmp_path, **changes), *argv]) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1 and "Traceback" not in err


def test_the_page_passes_its_value_else_the_spec_s_else_one(sqlite_store):
    store, registry = sqlite_store, job_registry.registry()
    spec = parse_sweep({**BASE, "cpus_per_cell": 0.5})
    assert logic.ray_executor(registry, store, "", spec, 0.25).cpus_per_cell == 0.25
    assert logic.ray_executor(registry, store, "", spec).cpus_per_cell == 0.5
    assert logic.ray_executor(registry, store, "", parse_sweep(BASE)).cpus_per_cell == 1.0
    with pytest.raises(ConfigError, match="above 0 and at most 64"):
        logic.start_sweep(registry, store, "me", spec, executor="ray", cpus_per_cell=100.0)


def test_the_page_has_the_field_only_for_ray():
    at = goto(new_app(), "sweeps")
    try:
        field = at.number_input(key="sw_cpus_per_cell")
        assert field.disabled and field.value is None
        at.radio(key="sw_executor").set_value("ray").run()
        assert not at.number_input(key="sw_cpus_per_cell").disabled
        assert not at.exception
    finally:
        job_registry.registry().shutdown()


# --- a failed Ray start ------------------------------------------------------------------------

def fake_ray(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> list[dict[str, object]]:
    """A `ray` whose init raises `error`; returns the calls made to init."""
    calls: list[dict[str, object]] = []

    def init(**kwargs: object) -> None:
        calls.append(kwargs)
        raise error

    ray = types.ModuleType("ray")
    ray.is_initialized = lambda: False  # type: ignore[attr-defined]
    ray.init = init  # type: ignore[attr-defined]
    private = types.ModuleType("ray._private")
    constants = types.ModuleType("ray._private.ray_constants")
    constants.ENABLE_RAY_CLUSTER = True  # type: ignore[attr-defined]
    private.ray_constants = constants  # type: ignore[attr-defined]
    ray._private = private  # type: ignore[attr-defined]
    for name, module in (("ray", ray), ("ray._private", private),
                         ("ray._private.ray_constants", constants)):
        monkeypatch.setitem(sys.modules, name, module)
    return calls


ERRORS = [
    Exception("The current node timed out during startup. This could happen because some of "
              "the Ray processes\nfailed to startup."),
    TimeoutError("Timed out after 60 seconds waiting for the GCS"),
    OSError(28, "No space left on device"),
    ConnectionError("Could not find any running Ray instance.\nPlease specify the one to "
                    "connect to by setting `--address`"),
]


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("address", [None, "auto"])
def test_a_failed_ray_start_is_one_line_and_a_failing_exit(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        error: BaseException, address: str | None) -> None:
    calls = fake_ray(monkeypatch, error)
    where = [] if address is None else ["--ray-address", address]
    code, out, err = run_cli(capsys, "sweep", spec_file(tmp_path), "--executor", "ray", *where,
                             "--quiet")
    assert calls, "ray.init was reached"
    assert code != 0 and out == "" and "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    line = lines[0]
    assert line.startswith("error: could not ") and type(error).__name__ in line  # Ray's words
    if address is None:
        assert "local Ray cluster" in line and "--ray-address" in line and "ray stop" in line
    else:
        assert "at auto" in line and "--ray-address" in line
