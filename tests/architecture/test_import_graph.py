"""The core's import graph (issue 25): no cycle anywhere, counting every import a module makes
(module level, inside functions and under TYPE_CHECKING alike), and packages that import only
downwards, so the folders of groupchat_core read as its architecture:

    shared records, config, errors (the top-level modules)
    providers, store          who answers a bid; where a run is kept
    outcomes                  tasks with answers: scorers, the vote, the judge (via providers)
    engine                    the conversation: turn loop, selection, GroupChat
    analysis, exports         reading recorded runs; bundles and tables
    sweeps                    many chats over a parameter grid
    integrations              OpenTelemetry traces, MLflow tracking (optional libraries)
    cli                       the command line, on top of all of them

`testing` (fakes for users' tests) may use the shared modules and providers only.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import ROOT

PACKAGE = ROOT / "groupchat_core"
LAYERS: dict[str, int] = {
    "shared": 0, "providers": 1, "store": 1, "outcomes": 2, "engine": 3, "analysis": 4,
    "exports": 4, "sweeps": 5, "integrations": 6, "cli": 7, "top": 8}
TESTING_MAY_IMPORT = {"shared", "providers", "testing"}


def dotted(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {dotted(p): p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """Every groupchat_core module `name` imports, wherever the import statement sits."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join([*package[:len(package) - node.level + 1],
                                 *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            for alias in node.names:
                if f"{base}.{alias.name}" in known:
                    found.add(f"{base}.{alias.name}")
                elif base in known:
                    found.add(base)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in known)
    return found - {name}


def graph() -> dict[str, set[str]]:
    mods = modules()
    return {name: imports_of(name, path, set(mods)) for name, path in mods.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), plus self-loops."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def area(name: str) -> str:
    """The architectural area of a module: its subpackage, 'shared' or 'top'."""
    parts = name.split(".")
    if len(parts) == 1 or parts[1] == "__main__":
        return "top"
    if (PACKAGE / parts[1]).is_dir():
        return parts[1]
    return "shared"


def layering_violations(edges: dict[str, set[str]]) -> list[str]:
    bad = []
    for name, targets in sorted(edges.items()):
        here = area(name)
        for target in sorted(targets):
            there = area(target)
            if here == there:
                continue
            if here == "testing":
                ok = there in TESTING_MAY_IMPORT
            elif there == "testing":
                ok = False
            else:
                ok = LAYERS[there] < LAYERS[here]
            if not ok:
                bad.append(f"{name} ({here}) imports {target} ({there})")
    return bad


def test_the_core_has_no_import_cycle():
    assert cycles(graph()) == []


def test_packages_import_only_downwards():
    assert layering_violations(graph()) == []


def test_every_core_module_belongs_to_a_known_area():
    assert {area(name) for name in graph()} <= set(LAYERS) | {"testing"}


def test_the_checks_see_cycles_and_upward_imports():
    """The checks themselves can fail: a planted cycle and an upward import are reported."""
    planted = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(planted) == [["a", "b", "c"]]
    upward = {"groupchat_core.providers._requests": {"groupchat_core.engine._turn_loop"},
              "groupchat_core._records": {"groupchat_core.store"},
              "groupchat_core.engine._turn_loop": {"groupchat_core.providers._requests"},
              "groupchat_core.testing._fake_server": {"groupchat_core.store"}}
    assert layering_violations(upward) == [
        "groupchat_core._records (shared) imports groupchat_core.store (store)",
        "groupchat_core.providers._requests (providers) imports groupchat_core.engine._turn_loop"
        " (engine)",
        "groupchat_core.testing._fake_server (testing) imports groupchat_core.store (store)"]


def test_the_graph_sees_relative_lazy_and_type_only_imports():
    edges = graph()
    assert "groupchat_core._records" in edges["groupchat_core.engine._turn_loop"]
    # A function-level import and a relative one from a subpackage both count.
    assert any(t.startswith("groupchat_core.providers.") for t in
               edges["groupchat_core.engine._turn_loop"])
