"""The distribution as a new user gets it: build the wheel, install it into a fresh venv outside
the repo (dependencies resolved from the registry under constraints.txt, as `pip install -c
constraints.txt groupchat-lab` does), then, from a directory outside the repo and with nothing of
the checkout on the path, run `groupchat-lab --version`, a sim chat, and `groupchat-lab serve`
until its health endpoint answers and the Run page renders in a real browser. And what the wheel
tells tools beside it: its licence, and that `groupchat_core` is typed (mypy against the wheel
unpacked into a bare venv, no pip, no dependencies: what a user's code sees).

The installed copy's data home is the platform's user data directory: XDG_DATA_HOME points it
into tmp_path, so the test never writes to the real one. One module-scoped install serves every
test. The wheel is built once, from a clean copy of the checkout's source, for every test
here. The dependencies come from a wheelhouse outside the repo (the user cache directory, one per
requirements.txt + constraints.txt), filled once by `pip download` from the registry; pip then
resolves the wheel's declared dependencies against it offline (`--no-index`), so a dependency
missing from the metadata still fails the install, and reruns skip the network. Durations are
in BENCHMARKS.md, not asserted. The venvs get no pip of their own (ensurepip is seconds per venv):
the suite's pip installs into them (`pip --python`), with the same resolver a user's pip runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from groupchat_core.store import SCHEMA_VERSION
from tests.helpers import ROOT
from tests.helpers.waits import eventually

CHROMIUM = "/usr/bin/chromium"
SPEC = {
    "schema_version": 1, "name": "installed", "max_loops": 4, "threshold": 0.2,
    "agents": [
        {"agent_name": "Optimist", "system_prompt": "You argue for the benefits.",
         "model_name": "sim/balanced"},
        {"agent_name": "Pessimist", "system_prompt": "You argue for the risks.",
         "model_name": "sim/eager"},
    ],
}


@dataclass
class Installed:
    wheel: Path
    venv: Path
    outside: Path  # the working directory: outside the repo
    data_dir: Path  # XDG_DATA_HOME of the commands
    env: dict[str, str]

    @property
    def command(self) -> Path:
        return self.venv / "bin" / "groupchat-lab"

    def run(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.command), *args], cwd=self.outside, env=self.env,
                              capture_output=True, text=True, timeout=timeout)


def _env(data_dir: Path) -> dict[str, str]:
    """A user's environment: no key, no checkout on the path, no store chosen."""
    env = {k: v for k, v in os.environ.items()
           if not k.endswith("_API_KEY") and k not in (
               "PYTHONPATH", "GROUPCHAT_DB", "GROUPCHAT_HOME", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(XDG_DATA_HOME=str(data_dir), GROUPCHAT_BLOCK_REMOTE_CALLS="1",
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def _step(cmd: list[str], what: str, **kwargs: object) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]
    if done.returncode != 0:
        pytest.fail(f"{what} failed ({done.returncode}):\n{done.stdout[-3000:]}\n"
                    f"{done.stderr[-3000:]}")


def _pip(venv: Path, *args: str) -> list[str]:
    """pip (the suite's) acting on `venv`'s interpreter and site-packages."""
    return [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), *args]


REQUIREMENTS = ("requirements.txt", "requirements-dashboard.txt")
OTHER_PANDAS = "3.0.6"  # requirements.txt's floor: the engine runs with it (engine_only below)


def _wheelhouse(env: dict[str, str]) -> Path:
    """The requirements' wheels (engine and dashboard, and everything they pull in, under
    constraints.txt) and the other pandas, downloaded once per pin set into the user cache."""
    import platformdirs

    pins = b"".join((ROOT / name).read_bytes() for name in (*REQUIREMENTS, "constraints.txt"))
    cache = platformdirs.user_cache_path("groupchat-lab", appauthor=False) / "wheelhouse"
    house = cache / hashlib.sha256(pins + OTHER_PANDAS.encode()).hexdigest()[:16]
    if not (house / ".complete").exists():
        partial = cache / f".partial-{os.getpid()}"
        shutil.rmtree(partial, ignore_errors=True)
        wanted = [arg for name in REQUIREMENTS for arg in ("-r", str(ROOT / name))]
        _step([sys.executable, "-m", "pip", "download", "--quiet", "-d", str(partial), *wanted,
               "-c", str(ROOT / "constraints.txt")],
              "pip download (the wheelhouse)", env=env, timeout=1200)
        _step([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d",
               str(partial), f"pandas=={OTHER_PANDAS}"], "pip download (the other pandas)",
              env=env, timeout=600)
        (partial / ".complete").touch()
        try:
            partial.rename(house)
        except OSError:  # another run finished it first
            shutil.rmtree(partial, ignore_errors=True)
    return house


def constraints_but(package: str, folder: Path) -> Path:
    """constraints.txt without `package`'s pin: what a user who asks for another version of
    it resolves against (everything else stays vetted)."""
    lines = (ROOT / "constraints.txt").read_text().splitlines()
    kept = [line for line in lines if not line.lower().startswith(f"{package}==")]
    assert len(kept) == len(lines) - 1
    path = folder / f"constraints-but-{package}.txt"
    path.write_text("\n".join(kept) + "\n")
    return path


def site_size(venv: Path) -> int:
    """Bytes installed in a venv's site-packages."""
    (site,) = (venv / "lib").glob("python3.*/site-packages")
    return sum(p.stat().st_size for p in site.rglob("*") if p.is_file() and not p.is_symlink())


# What a build must not see: setuptools reuses an in-tree build/ folder, so a file deleted from
# the source would still reach a wheel built in place (and a test of it would pass).
BUILD_LEFTOVERS = shutil.ignore_patterns(".git", ".venv", "data", "build", "dist", "artifacts",
                                         "*.egg-info", "__pycache__", ".*_cache")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built once from a clean copy of the checkout's source."""
    source, out = tmp_path_factory.mktemp("source") / "src", tmp_path_factory.mktemp("wheel")
    shutil.copytree(ROOT, source, ignore=BUILD_LEFTOVERS)
    _step([sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(source)],
          "building the wheel", cwd=out, timeout=600)
    (built,) = out.glob("groupchat_lab-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("install")
    assert not root.resolve().is_relative_to(ROOT)
    venv, outside, data_dir = root / "venv", root / "elsewhere", root / "xdg-data"
    outside.mkdir()
    started = time.perf_counter()
    _step([sys.executable, "-m", "venv", "--without-pip", str(venv)], "creating the venv",
          timeout=300)
    house = _wheelhouse(_env(data_dir))
    fetched = time.perf_counter()
    _step(_pip(venv, "install", "--quiet", "--no-compile", "--no-index", "--find-links",
               str(house), "-c", str(ROOT / "constraints.txt"), f"{wheel}[dashboard]"),
          "pip install", cwd=outside, env=_env(data_dir), timeout=1200)
    sys.stderr.write(f"\n[test_install] venv + wheelhouse in {fetched - started:.1f} s, pip "
                     f"install in {time.perf_counter() - fetched:.1f} s\n")
    return Installed(wheel, venv, outside, data_dir, _env(data_dir))


def test_the_wheel_holds_engine_and_dashboard_under_their_own_names(installed):
    with zipfile.ZipFile(installed.wheel) as wheel:
        names = wheel.namelist()
        metadata = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA")))
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"groupchat_core", "groupchat_ui"}  # no app_pages, streamlit_app, bench
    packages = {str(p.parent.relative_to(ROOT)) for top in ("groupchat_core", "groupchat_ui")
                for p in (ROOT / top).rglob("__init__.py")}
    assert {p for p in packages if f"{p}/__init__.py" not in names} == set()  # none forgotten
    data = {str(p.relative_to(ROOT)) for top in ("groupchat_core", "groupchat_ui")
            for p in (ROOT / top).rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc")}
    assert data and data - set(names) == set()  # no type marker or page script left behind
    pages = {f"groupchat_ui/_app/app_pages/{p.name}" for p in (ROOT / "app_pages").glob("*.py")}
    assert pages and pages <= set(names)
    assert {"groupchat_ui/_app/streamlit_app.py",
            "groupchat_ui/_app/.streamlit/config.toml"} <= set(names)
    requires = [line for line in metadata.decode().splitlines()
                if line.startswith("Requires-Dist:")]
    assert "Requires-Dist: litellm[mcp]==1.106.2" in requires  # the vetted pin, exact
    assert f"Requires-Dist: pandas<4,>={OTHER_PANDAS}" in requires  # a range, next major out
    assert "Requires-Dist: pydantic<3,>=2.14.4" in requires
    base = [r.split(";")[0] for r in requires if "extra ==" not in r]  # the engine's own
    assert [r for r in base if "==" in r] == ["Requires-Dist: litellm[mcp]==1.106.2"]
    dashboard = [r for r in requires if r.endswith('extra == "dashboard"')]
    assert any(r.startswith("Requires-Dist: streamlit<2,>=") for r in dashboard), requires
    assert all(r.endswith('extra == "dashboard"') for r in requires
               if "streamlit" in r or "plotly" in r), requires


def test_version_names_the_code_and_a_data_home_outside_the_package(installed):
    stray = installed.outside / "data" / "groupchat.db"  # e.g. left by a clone's make run
    stray.parent.mkdir()
    stray.write_bytes(b"")
    try:
        done = installed.run("--version")
    finally:
        stray.unlink()
        stray.parent.rmdir()
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    home = installed.data_dir / "groupchat-lab" / "groupchat.db"
    assert lines[:4] == ["groupchat-lab 0.2.0", "litellm 1.106.2",
                         f"store schema {SCHEMA_VERSION}",
                         f"data: sqlite:///{home} (from user data directory)"]
    assert f"{stray.resolve()} holds an existing store that is not in use" in lines[4]
    assert f"GROUPCHAT_DB=sqlite:///{stray.resolve()}" in lines[4]
    where = subprocess.run(
        [str(installed.venv / "bin" / "python"), "-c",
         "import groupchat_core, groupchat_ui; print(groupchat_core.__file__); "
         "print(groupchat_ui.__file__)"],
        cwd=installed.outside, env=installed.env, capture_output=True, text=True, timeout=120)
    site = installed.venv / "lib"
    assert all(Path(p).is_relative_to(site) for p in where.stdout.split()), where.stdout


def test_a_sim_chat_runs_and_lands_in_the_user_data_directory(installed):
    spec = installed.outside / "chat.json"
    spec.write_text(json.dumps(SPEC))
    done = installed.run("run", "chat.json", "--task", "Should we adopt AI?", "--max-loops", "3")
    assert done.returncode == 0, done.stderr
    assert "Optimist" in done.stdout or "Pessimist" in done.stdout
    assert "stopped: max_loops after" in done.stderr
    listed = installed.run("list", "--json")
    runs = json.loads(listed.stdout)
    assert [(r["status"], r["max_loops"], r["task"]) for r in runs] == [
        ("finished", 3, "Should we adopt AI?")]
    assert (installed.data_dir / "groupchat-lab" / "groupchat.db").is_file()
    python = subprocess.run(  # `python -m groupchat_core` is the same command
        [str(installed.venv / "bin" / "python"), "-m", "groupchat_core", "list", "--json"],
        cwd=installed.outside, env=installed.env, capture_output=True, text=True, timeout=120)
    assert json.loads(python.stdout) == runs


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _health(url: str, proc: subprocess.Popen[bytes], log: Path) -> str:
    def answer() -> str | None:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as reply:
                return str(reply.read().decode())
        except OSError:
            return None

    def exited() -> str | None:
        if proc.poll() is None:
            return None
        return f"serve exited with {proc.returncode}:\n{log.read_text()[-3000:]}"

    return eventually(answer, f"serve answering at {url}", step=0.2, alive=exited)


def test_serve_starts_the_packaged_dashboard_from_anywhere(installed):
    port, log = _free_port(), installed.outside / "serve.log"
    url = f"http://127.0.0.1:{port}"
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(installed.command), "serve", "--port", str(port)],
                                cwd=installed.outside, env=installed.env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        assert _health(url, proc, log) == "ok"
        from playwright.sync_api import sync_playwright

        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                         args=["--no-sandbox", "--disable-gpu"])
            try:
                page = browser.new_page()
                page.goto(url)
                page.get_by_text("status: idle").wait_for(timeout=90_000)  # Run page ran
                page.get_by_test_id("stSidebarNav").get_by_text("Settings", exact=True).click()
                page.get_by_text("user data directory").wait_for(timeout=60_000)
                assert page.get_by_test_id("stException").count() == 0
            finally:
                browser.close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    text = log.read_text()
    assert f"GroupChat Lab on {url}" in text and "Traceback" not in text, text
    assert "model-call path warmed in" in text, text  # warm before it took a session
    # SIGTERM is a clean exit whose exit hooks ran (the store's writer flushes there), not a
    # death by the signal (-15) once uvicorn has raised it again after its graceful stop
    assert proc.returncode == 128 + signal.SIGTERM, proc.returncode


@pytest.fixture(scope="module")
def engine_only(installed: Installed, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The wheel without extras beside the other pandas, in a venv of its own: what a user who
    wants the engine in a project pinned to another pandas gets."""
    root = tmp_path_factory.mktemp("engine")
    venv, data_dir = root / "venv", root / "xdg-data"
    _step([sys.executable, "-m", "venv", "--without-pip", str(venv)], "creating the venv",
          timeout=300)
    house = _wheelhouse(_env(data_dir))
    _step(_pip(venv, "install", "--quiet", "--no-compile", "--no-index", "--find-links",
               str(house), "-c", str(constraints_but("pandas", root)), str(installed.wheel),
               f"pandas=={OTHER_PANDAS}"), "pip install (engine only)",
          cwd=installed.outside, env=_env(data_dir), timeout=1200)
    full, engine = site_size(installed.venv), site_size(venv)
    sys.stderr.write(f"\n[test_install] installed sizes: engine only {engine / 1e6:.0f} MB, "
                     f"with the dashboard {full / 1e6:.0f} MB\n")
    return Installed(installed.wheel, venv, installed.outside, data_dir, _env(data_dir))


def test_the_full_install_resolves_beside_another_pandas(installed, tmp_path):
    """pip's resolver, offline against the wheelhouse: the package with its dashboard and a
    pandas other than the vetted one (exact pins made this ResolutionImpossible)."""
    house = _wheelhouse(installed.env)
    report = tmp_path / "report.json"
    done = subprocess.run(
        _pip(installed.venv, "install", "--dry-run", "--ignore-installed", "--quiet", "--report",
             str(report), "--no-index", "--find-links", str(house), "-c",
             str(constraints_but("pandas", tmp_path)), f"{installed.wheel}[dashboard]",
             f"pandas=={OTHER_PANDAS}"),
        cwd=installed.outside, env=installed.env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    chosen = {i["metadata"]["name"].lower(): i["metadata"]["version"]
              for i in json.loads(report.read_text())["install"]}
    assert chosen["pandas"] == OTHER_PANDAS and chosen["litellm"] == "1.106.2"
    assert "streamlit" in chosen and "plotly" in chosen


def test_the_engine_installs_alone_beside_another_pandas_and_runs(engine_only):
    python = str(engine_only.venv / "bin" / "python")
    probe = subprocess.run(
        [python, "-c", "import importlib.metadata as m, importlib.util as u; "
         "print(m.version('pandas'), m.version('litellm'), "
         "[n for n in ('streamlit', 'plotly', 'pyarrow', 'Authlib') if u.find_spec(n.lower())])"],
        cwd=engine_only.outside, env=engine_only.env, capture_output=True, text=True, timeout=120)
    assert probe.stdout.strip().split(maxsplit=2) == [OTHER_PANDAS, "1.106.2", "[]"], \
        probe.stderr
    spec = engine_only.outside / "engine-chat.json"
    spec.write_text(json.dumps(SPEC))
    done = engine_only.run("run", str(spec), "--task", "Engine only?", "--max-loops", "3")
    assert done.returncode == 0, done.stderr
    run_id = done.stderr.strip().splitlines()[-1].removeprefix("run ")
    shown = engine_only.run("show", run_id, "--bids")  # the bid log is a pandas frame
    assert shown.returncode == 0 and "Engine only?" in shown.stdout, shown.stderr
    served = engine_only.run("serve")
    assert served.returncode == 2 and served.stderr == (
        "error: the dashboard is not installed (Streamlit is missing): pip install "
        "'groupchat-lab[dashboard]'\n")


# --- what the wheel tells tools beside it ------------------------------------------------------


def test_the_wheel_carries_the_typed_marker_and_the_licence(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA")))
        licences = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        assert "groupchat_core/py.typed" in names
        assert len(licences) == 1
        text = archive.read(licences[0]).decode()
    assert text == (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n\nCopyright (c) 2026 GroupChat Lab contributors\n")
    assert "License-Expression: MIT" in metadata.decode().splitlines()


@pytest.fixture(scope="module")
def user_python(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of a bare venv (no pip, no dependencies) with the wheel unpacked into its
    site-packages: a pure wheel unpacked is what pip puts there, and all mypy needs."""
    venv = tmp_path_factory.mktemp("bare-venv")
    _step([sys.executable, "-m", "venv", "--without-pip", str(venv)], "creating the bare venv",
          timeout=120)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, timeout=60).stdout.strip()
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(purelib)
    assert Path(purelib).is_relative_to(venv)  # never the suite's own environment
    return python


def _mypy(python: Path, folder: Path, code: str) -> subprocess.CompletedProcess[str]:
    """mypy as a user runs it on their own file: no config, the package from site-packages."""
    (folder / "use.py").write_text(code, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--python-executable", str(python), "--no-incremental",
         "--cache-dir", str(folder / ".mypy_cache"), "use.py"],
        cwd=folder, capture_output=True, text=True, timeout=300)


def test_mypy_checks_a_users_calls_against_the_installed_package(user_python: Path,
                                                                  tmp_path: Path) -> None:
    """One run over a wrong call (line 3) and a right one (line 4): only the wrong one errs."""
    done = _mypy(user_python, tmp_path, "from groupchat_core import is_sim_model\n\n"
                                 "flag: bool = is_sim_model(3)\n"
                                 "fine: bool = is_sim_model('sim/eager')\n")
    assert done.returncode == 1, done.stdout + done.stderr
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and errors[0].startswith("use.py:3:"), done.stdout
    assert 'Argument 1 to "is_sim_model" has incompatible type "int"' in errors[0]
    assert "py.typed" not in done.stdout and "import-untyped" not in done.stdout
