"""Tests use the public API wherever the name is public (issue 25, item 6): a test that imports
`Agent` from `groupchat_core._agent` breaks when the module moves, though users' code would not.

A private import is kept only for a name no public module exports (a unit tested as such); the
file's docstring then says so ("Private imports ...")."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from tests.helpers import ROOT

PUBLIC = ("groupchat_core", "groupchat_core.store", "groupchat_core.sweeps",
          "groupchat_core.analysis", "groupchat_core.testing")


def _private(module: str) -> bool:
    return module.startswith("groupchat_core") and any(
        part.startswith("_") for part in module.split("."))


def _imports(path: Path) -> list[tuple[int, str, str]]:
    """(line, module, name) of each `from groupchat_core...<private> import name`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [(node.lineno, node.module, alias.name) for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module and _private(node.module)
            for alias in node.names]


def _public_home(module: str, name: str) -> str | None:
    real = getattr(importlib.import_module(module), name, None)
    for home in PUBLIC:
        package = importlib.import_module(home)
        if name in getattr(package, "__all__", ()) and getattr(package, name, None) is real:
            return home
    return None


def test_no_test_imports_a_public_name_from_a_private_module() -> None:
    found = [f"{path.relative_to(ROOT)}:{line}: {name} from {module} (public in {home})"
             for path in sorted((ROOT / "tests").rglob("*.py"))
             for line, module, name in _imports(path)
             if (home := _public_home(module, name)) is not None]
    assert found == []


def test_a_test_with_private_imports_says_why() -> None:
    silent = [str(path.relative_to(ROOT)) for path in sorted((ROOT / "tests").rglob("test_*.py"))
              if _imports(path) and "Private imports" not in (ast.get_docstring(
                  ast.parse(path.read_text(encoding="utf-8"))) or "")]
    assert silent == []
