"""All SQL lives in groupchat_core/store/, behind RunStore's methods: no module outside it (the
rest of the engine, the dashboard, the pages, the benchmarks) imports SQLAlchemy or a private
`groupchat_core.store._*` module. Tests may reach inside; they are not checked."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import ROOT

STORE = ROOT / "groupchat_core" / "store"


def _module_of(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _absolute(path: Path, node: ast.ImportFrom) -> str:
    """The absolute module an ImportFrom names (relative imports resolved from `path`)."""
    if node.level == 0:
        return node.module or ""
    package = _module_of(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    base = package[:len(package) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _forbidden(module: str) -> bool:
    parts = module.split(".")
    if parts[0] == "sqlalchemy":
        return True
    return parts[:2] == ["groupchat_core", "store"] and len(parts) > 2 and \
        parts[2].startswith("_")


def store_leaks(path: Path, source: str | None = None) -> list[str]:
    """Every import in the file (module level or lazy, inside functions) that reaches SQLAlchemy
    or a private store module, as 'line: module'."""
    tree = ast.parse(source if source is not None else path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(path, node)
            names = [module] if _forbidden(module) else [f"{module}.{a.name}" for a in node.names]
        else:
            continue
        found += [f"{node.lineno}: {name}" for name in names if _forbidden(name)]
    return found


def _checked_files() -> list[Path]:
    files = [p for p in (ROOT / "groupchat_core").rglob("*.py") if STORE not in p.parents]
    for folder in ("groupchat_ui", "app_pages", "bench"):
        files += (ROOT / folder).rglob("*.py")
    return [*files, *ROOT.glob("*.py")]


def test_nothing_outside_the_store_imports_sqlalchemy_or_store_internals():
    files = _checked_files()
    assert len(files) > 40 and ROOT / "groupchat_core" / "exports" / "_bundles.py" in files
    leaks = {str(p.relative_to(ROOT)): store_leaks(p) for p in files}
    assert {name: found for name, found in leaks.items() if found} == {}


def test_the_check_sees_every_spelling_of_a_leak():
    bundles = ROOT / "groupchat_core" / "exports" / "_bundles.py"
    source = "\n".join([
        "import sqlalchemy",
        "from sqlalchemy import select",
        "from ..store._schema import runs",
        "from ..store import _cachetable",
        "from groupchat_core.store._writer import status_for",
        "def lazy():",
        "    from ..store._recorder import writer_thread",
        "from ..store import RunStore, status_for",  # public names: fine
        "from .._records import Bid",
    ])
    assert [leak.split(": ")[1] for leak in store_leaks(bundles, source)] == [
        "sqlalchemy", "sqlalchemy", "groupchat_core.store._schema",
        "groupchat_core.store._cachetable", "groupchat_core.store._writer",
        "groupchat_core.store._recorder"]
    executor = ROOT / "groupchat_core" / "sweeps" / "_executor.py"
    assert store_leaks(executor, "from ..store._writer import status_for") == [
        "1: groupchat_core.store._writer"]
    assert store_leaks(executor, "from ..store import status_for") == []
