"""Import directions (DESIGN.md): app_pages -> ui -> groupchat_core, never back; and only the
page-facing ui modules import streamlit, so the engine, the CLI and the pure helpers stay light
and testable without a script run."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PURE_UI = ("charts", "runtime", "safety", "providers", "presets", "views", "services")


def imported_roots(path: Path) -> set[str]:
    """Top-level names of every module a file imports (absolute imports only)."""
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_the_engine_never_imports_streamlit_ui_or_pages():
    for path in (ROOT / "groupchat_core").rglob("*.py"):
        bad = imported_roots(path) & {"streamlit", "ui", "app_pages"}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_ui_never_imports_pages_and_pure_modules_never_import_streamlit():
    for path in (ROOT / "ui").glob("*.py"):
        roots = imported_roots(path)
        assert "app_pages" not in roots, path.name
        if path.stem in PURE_UI:
            assert "streamlit" not in roots, f"ui/{path.name} must stay streamlit-free"


def test_importing_the_engine_and_pure_ui_loads_no_streamlit():
    modules = ", ".join([
        "groupchat_core", "groupchat_core.analysis", "groupchat_core._bundles",
        "groupchat_core._exports", "groupchat_core.cli", "groupchat_core.store",
        *(f"ui.{name}" for name in PURE_UI)])
    code = f"import sys, {modules}; sys.exit('streamlit' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=False).returncode == 0


def test_pages_are_thin():
    for path in (ROOT / "app_pages").glob("*.py"):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        assert lines <= 150, f"{path.name} has {lines} lines: move logic into ui/"
