"""Import directions (DESIGN.md): app_pages -> ui -> groupchat_core, never back; and only the
page-facing ui modules import streamlit, so the engine, the CLI and the pure helpers stay light
and testable without a script run.

Which ui modules are pure is derived, not listed: a ui module that does not import streamlit
itself is pure, and a pure module may import only pure ui modules, so nothing streamlit-free
loads streamlit behind its back. That holds as ui/ grows or is reorganised.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UI = ROOT / "ui"
# Benchmarks of the dashboard itself import ui and streamlit; every other benchmark is engine-only.
DASHBOARD_BENCHMARKS = ("dashboard",)


def parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def imported_roots(path: Path) -> set[str]:
    """Top-level names of every module a file imports (absolute imports only)."""
    roots = set()
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def ui_imports(path: Path) -> set[str]:
    """The ui modules (by stem) one ui module imports: `from . import x`, `from .x import y`,
    `from ui import x`, `import ui.x`."""
    found = set()
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level == 1 or (node.level == 0 and module.split(".")[0] == "ui"):
                parts = module.split(".")[1:] if node.level == 0 else module.split(".")
                parts = [p for p in parts if p]
                if parts:
                    found.add(parts[0])
                else:  # `from . import x` / `from ui import x`: the names are modules
                    found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name.split(".")[1] for alias in node.names
                         if alias.name.startswith("ui."))
    return {name for name in found if (UI / f"{name}.py").exists()}


def ui_modules() -> dict[str, Path]:
    return {path.stem: path for path in sorted(UI.glob("*.py")) if path.stem != "__init__"}


def pure_ui() -> list[str]:
    """The ui modules that do not import streamlit themselves."""
    return [name for name, path in ui_modules().items()
            if "streamlit" not in imported_roots(path)]


def test_the_engine_never_imports_streamlit_ui_pages_or_benchmarks():
    for path in (ROOT / "groupchat_core").rglob("*.py"):
        bad = imported_roots(path) & {"streamlit", "ui", "app_pages", "bench", "tests"}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_engine_benchmarks_never_import_streamlit_ui_or_pages():
    checked = 0
    for path in (ROOT / "bench").glob("*.py"):
        if path.stem in DASHBOARD_BENCHMARKS:
            continue
        bad = imported_roots(path) & {"streamlit", "ui", "app_pages"}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"
        checked += 1
    assert checked >= 3  # engine, store, sweeps


def test_dashboard_code_never_imports_benchmarks_or_tests():
    for path in [*UI.glob("*.py"), *(ROOT / "app_pages").glob("*.py"), ROOT / "streamlit_app.py"]:
        bad = imported_roots(path) & {"bench", "tests"}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_ui_never_imports_pages():
    for path in UI.glob("*.py"):
        assert "app_pages" not in imported_roots(path), path.name


def test_the_rule_finds_pure_and_streamlit_modules():
    pure, modules = set(pure_ui()), set(ui_modules())
    assert {"services", "job_registry", "charts", "sweep_services"} <= pure  # the logic
    assert {"state", "components", "actions"} <= modules - pure  # the page-facing side
    assert ui_imports(UI / "actions.py") >= {"forms", "services", "store_access", "state"}


def test_pure_ui_modules_import_only_pure_ui_modules():
    pure = set(pure_ui())
    for name in sorted(pure):
        impure = ui_imports(ui_modules()[name]) - pure
        assert not impure, f"ui/{name}.py is streamlit-free but imports ui modules that use " \
                           f"streamlit: {sorted(impure)}"


def test_importing_the_engine_and_pure_ui_loads_no_streamlit():
    modules = ", ".join([
        "groupchat_core", "groupchat_core.analysis", "groupchat_core._bundles",
        "groupchat_core._exports", "groupchat_core.cli", "groupchat_core.store",
        "groupchat_core.sweeps", *(f"ui.{name}" for name in pure_ui())])
    code = f"import sys, {modules}; sys.exit('streamlit' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=False).returncode == 0


def test_pages_are_thin():
    for path in (ROOT / "app_pages").glob("*.py"):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        assert lines <= 150, f"{path.name} has {lines} lines: move logic into ui/"
