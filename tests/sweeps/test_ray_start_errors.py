"""A Ray start that fails is one line naming the problem and the fix, never a traceback
(issue 44, 4d). ray.init raises more than ConnectionError/ValueError/RuntimeError: a bare
Exception when a local node times out during startup, TimeoutError, OSError for a full /tmp.

No Ray is needed: a stand-in `ray` module whose init raises what Ray raises; the real cluster
paths are in test_sweep_ray.py.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli

pytestmark = pytest.mark.usefixtures("fresh_engines")


def write_spec(path: Path) -> Path:
    agents = [{"agent_name": n, "model_name": "sim/balanced"} for n in ("Pro", "Con")]
    path.write_text(json.dumps({"name": "ray-start", "base": {"max_loops": 3, "agents": agents},
                                "grid": {"threshold": [0.3]}, "tasks": ["Q?"]}))
    return path


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
    code, out, err = run_cli(capsys, "sweep", str(write_spec(tmp_path / "s.json")),
                             "--executor", "ray", *where, "--quiet")
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
