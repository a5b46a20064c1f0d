"""Import directions (DESIGN.md): app_pages -> groupchat_ui -> groupchat_core, never back;
groupchat_ui organised by page (groupchat_ui/X/ for app_pages/X.py) over a shared kit; and a
naming rule for which ui modules may import streamlit, so the engine, the CLI and the pure
helpers stay light and testable without a script run.

The rule (documented in groupchat_ui/__init__.py): `view.py`, `*_view.py` and `actions.py` may
import streamlit, and so may `state.py`, `store_access.py`, `components.py` and `server.py`
in groupchat_ui/kit/; every other ui module is pure: it imports neither streamlit nor
(transitively) a ui module that does.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import Counter
from pathlib import Path

from tests.helpers import ROOT

UI = ROOT / "groupchat_ui"
PAGES = ROOT / "app_pages"
KIT_STREAMLIT = {"state", "store_access", "components", "server"}
# Benchmarks of the dashboard itself import groupchat_ui and streamlit; every other benchmark is
# engine-only. bench/streaming times the Run page's own observer (groupchat_ui.run.logic).
DASHBOARD_BENCHMARKS = ("dashboard", "streaming", "room_window",  # room_window: a tab's presence
                        "blank_page_app",  # the live view's shape, as a Streamlit app
                        "job_memory")  # the dashboard's job table over 1,000 chats


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


def dotted(path: Path) -> str:
    """groupchat_ui/run/logic.py -> groupchat_ui.run.logic; .../kit/__init__.py -> ....kit."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def ui_files() -> dict[str, Path]:
    """Every ui module and package by dotted name."""
    return {dotted(path): path for path in sorted(UI.rglob("*.py"))}


def ui_imports(path: Path) -> set[str]:
    """The ui modules (dotted) a file imports, absolute or relative, including `from pkg import
    module` forms; a package import counts as its __init__."""
    known = ui_files()
    here = dotted(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found: set[str] = set()
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names
                         if alias.name.split(".")[0] == "groupchat_ui")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            else:
                module = node.module or ""
            if module.split(".")[0] != "groupchat_ui":
                continue
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return {name for name in found if name in known}


def may_import_streamlit(path: Path) -> bool:
    """The naming rule: page-facing modules by name; everything else is pure."""
    stem = path.stem
    if stem in ("view", "actions") or stem.endswith("_view"):
        return True
    return path.parent == UI / "kit" and stem in KIT_STREAMLIT


def pure_ui() -> list[str]:
    return [name for name, path in ui_files().items() if not may_import_streamlit(path)]


def page_packages() -> list[str]:
    return sorted(p.name for p in UI.iterdir() if (p / "__init__.py").exists() and p.name != "kit")


def test_the_engine_never_imports_streamlit_ui_pages_or_benchmarks():
    for path in (ROOT / "groupchat_core").rglob("*.py"):
        bad = imported_roots(path) & {"streamlit", "groupchat_ui", "app_pages", "bench", "tests"}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_engine_benchmarks_never_import_streamlit_ui_or_pages():
    checked = 0
    for path in (ROOT / "bench").glob("*.py"):
        if path.stem in DASHBOARD_BENCHMARKS:
            continue
        bad = imported_roots(path) & {"streamlit", "groupchat_ui", "app_pages"}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"
        checked += 1
    assert checked >= 3  # engine, store, sweeps


def test_dashboard_code_never_imports_benchmarks_or_tests():
    for path in [*UI.rglob("*.py"), *PAGES.glob("*.py"), ROOT / "streamlit_app.py"]:
        bad = imported_roots(path) & {"bench", "tests"}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_ui_never_imports_pages():
    for path in UI.rglob("*.py"):
        assert "app_pages" not in imported_roots(path), path.relative_to(ROOT)


def test_ui_has_one_package_per_page_over_a_kit():
    pages = sorted(p.stem for p in PAGES.glob("*.py") if p.stem != "__init__")
    assert page_packages() == pages
    assert (UI / "kit" / "__init__.py").exists()
    assert not [p.name for p in UI.glob("*.py") if p.name != "__init__.py"], \
        "groupchat_ui/ holds only packages: put a module in its page's package or in kit/"


def test_pages_call_only_the_kit_and_their_own_package():
    for path in PAGES.glob("*.py"):
        allowed = ("groupchat_ui.kit", f"groupchat_ui.{path.stem}")
        for name in ui_imports(path):
            assert name.startswith(allowed), f"app_pages/{path.name} imports {name}"


def test_packages_depend_on_the_kit_and_reach_other_pages_only_through_actions():
    for name, path in ui_files().items():
        parts = name.split(".")
        if len(parts) < 2:
            continue
        for target in ui_imports(path):
            other = target.split(".")
            if parts[1] == "kit":
                assert other[1] == "kit", f"{name} (the kit) imports the page package {target}"
            elif other[1] not in ("kit", parts[1]):
                assert other[2:] == ["actions"], \
                    f"{name} imports {target}: another page only through its actions"


def test_the_rule_sorts_modules_by_name():
    pure = set(pure_ui())
    assert {"groupchat_ui.kit.jobs", "groupchat_ui.kit.outcome_charts", "groupchat_ui.kit.safety",
            "groupchat_ui.run.logic", "groupchat_ui.agents.logic",
            "groupchat_ui.sweeps.logic", "groupchat_ui.sweeps.charts"} <= pure
    streamlit_side = set(ui_files()) - pure
    assert {"groupchat_ui.kit.state", "groupchat_ui.kit.components", "groupchat_ui.run.live_view",
            "groupchat_ui.agents.actions", "groupchat_ui.sweeps.results_view"} <= streamlit_side
    assert ui_imports(UI / "agents" / "actions.py") >= {
        "groupchat_ui.agents.logic", "groupchat_ui.kit.store_access", "groupchat_ui.kit.state",
        "groupchat_ui.run.actions"}


def test_only_page_facing_modules_import_streamlit():
    for name, path in ui_files().items():
        if not may_import_streamlit(path):
            assert "streamlit" not in imported_roots(path), \
                f"{name} imports streamlit: name it view.py/*_view.py/actions.py, or keep it pure"


def test_pure_ui_modules_import_only_pure_ui_modules():
    pure = set(pure_ui())
    for name in sorted(pure):
        impure = ui_imports(ui_files()[name]) - pure
        assert not impure, f"{name} is pure but imports ui modules that use streamlit: " \
                           f"{sorted(impure)}"


def test_importing_the_engine_and_pure_ui_loads_no_streamlit():
    modules = ", ".join([
        "groupchat_core", "groupchat_core.analysis", "groupchat_core.exports._bundles",
        "groupchat_core.exports._tables", "groupchat_core.cli", "groupchat_core.store",
        "groupchat_core.sweeps", *pure_ui()])
    code = f"import sys, {modules}; sys.exit('streamlit' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=False).returncode == 0


def test_no_function_is_defined_twice_in_one_package():
    """One definition per name in a package (e.g. a callback and the logic it calls)."""
    for package in [UI / "kit", *(UI / name for name in page_packages())]:
        names = Counter(node.name for path in package.glob("*.py")
                        for node in parsed(path).body
                        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"))
        twice = sorted(n for n, count in names.items() if count > 1)
        assert not twice, f"groupchat_ui/{package.name} defines {twice} more than once"


def test_one_job_table_with_one_terminal_set():
    defining = [dotted(path) for path in UI.rglob("*.py")
                if any(isinstance(node, ast.Assign | ast.AnnAssign) and "TERMINAL" in ast.unparse(
                    node.targets[0] if isinstance(node, ast.Assign) else node.target)
                    for node in parsed(path).body)]
    assert defining == ["groupchat_ui.kit.jobs"]
    submitting = [dotted(path) for path in UI.rglob("*.py") if "background_loop" in
                  {alias.name for node in ast.walk(parsed(path)) if isinstance(node, ast.ImportFrom)
                   for alias in node.names}]
    assert submitting == ["groupchat_ui.kit.jobs"]


def test_pages_are_thin():
    for path in PAGES.glob("*.py"):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        assert lines <= 150, f"{path.name} has {lines} lines: move logic into groupchat_ui/"
