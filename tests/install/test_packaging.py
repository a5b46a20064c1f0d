"""What the built wheel tells tools beside it: its licence, and that `groupchat_core` is typed.

Why a test of its own, apart from test_install.py: building the wheel takes seconds, installing
it with its dependencies minutes. Here the wheel is built once and "installed" without pip and
without dependencies (a pure wheel unpacked into a bare venv's site-packages is what pip puts
there), which is all mypy needs to see the package as a user's code sees it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.helpers import ROOT

# What a build must not see: setuptools reuses an in-tree build/ folder, so a file deleted from
# the source would still reach a wheel built in place (and a test of it would pass).
BUILD_LEFTOVERS = shutil.ignore_patterns(".git", ".venv", "data", "build", "dist", "artifacts",
                                         "*.egg-info", "__pycache__", ".*_cache")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from a clean copy of the checkout's source."""
    source, out = tmp_path_factory.mktemp("source") / "src", tmp_path_factory.mktemp("wheel")
    shutil.copytree(ROOT, source, ignore=BUILD_LEFTOVERS)
    done = subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out),
                           str(source)], capture_output=True, text=True, timeout=600, cwd=out)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (built,) = out.glob("groupchat_lab-*.whl")
    return built


def _metadata(names: list[str], archive: zipfile.ZipFile) -> str:
    return archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()


def test_the_wheel_carries_the_typed_marker_and_the_licence(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = _metadata(names, archive)
        licences = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        assert "groupchat_core/py.typed" in names
        assert len(licences) == 1
        text = archive.read(licences[0]).decode()
    assert text == (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n\nCopyright (c) 2026 GroupChat Lab contributors\n")
    assert "License-Expression: MIT" in metadata.splitlines()


@pytest.fixture(scope="module")
def user_python(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of a bare venv (no pip, no dependencies) with the wheel unpacked into its
    site-packages."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
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
    wrong = _mypy(user_python, tmp_path, "from groupchat_core import is_sim_model\n\n"
                                  "flag: bool = is_sim_model(3)\n")
    assert wrong.returncode == 1, wrong.stdout + wrong.stderr
    assert 'Argument 1 to "is_sim_model" has incompatible type "int"' in wrong.stdout
    assert "py.typed" not in wrong.stdout and "import-untyped" not in wrong.stdout
    right = _mypy(user_python, tmp_path, "from groupchat_core import is_sim_model\n\n"
                                  "flag: bool = is_sim_model('sim/eager')\n")
    assert right.returncode == 0, right.stdout + right.stderr
