"""Who may import litellm: only _litellm.py and _sim_litellm.py, and only inside functions.

litellm takes seconds to import, so importing the engine must never pull it in; the two modules
that talk to it load it lazily when a call needs it. Also pins that the provider types do not
sit in an import circle with the sim provider again.
"""

from __future__ import annotations

import ast
import subprocess
import sys

from tests.helpers import ROOT

PACKAGE = ROOT / "groupchat_core"
# The two seams, and _deployments for the Router.
ALLOWED = {"providers/_litellm.py", "providers/_sim_litellm.py", "providers/_deployments.py"}


def litellm_imports(tree: ast.Module) -> list[tuple[int, bool]]:
    """(line, inside a function) for every import of litellm or one of its submodules."""
    found: list[tuple[int, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        else:
            names = []
        if any(name == "litellm" or name.startswith("litellm.") for name in names):
            found.append((node.lineno, in_function))
        inner = in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(tree, False)
    return found


def test_the_checker_sees_top_level_and_function_imports():
    tree = ast.parse("import litellm\nfrom litellm.utils import x\n"
                     "def f():\n    import litellm.types\n")
    assert litellm_imports(tree) == [(1, False), (2, False), (4, True)]


def test_only_the_two_seams_import_litellm_and_only_lazily():
    users = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        imports = litellm_imports(ast.parse(path.read_text(encoding="utf-8")))
        if imports:
            users[path.relative_to(PACKAGE).as_posix()] = imports
    assert set(users) == ALLOWED, f"litellm imported by {sorted(set(users) - ALLOWED)}"
    for name, imports in users.items():
        eager = [line for line, lazy in imports if not lazy]
        assert not eager, f"{name} imports litellm at module level (line {eager})"


def test_importing_the_engine_does_not_load_litellm():
    code = ("import sys, groupchat_core, groupchat_core.providers._model_calls,"
            " groupchat_core.providers._sim_litellm, groupchat_core.engine._turn_loop;"
            " sys.exit('litellm' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=False).returncode == 0


def test_provider_types_import_neither_the_seam_nor_the_sim_provider():
    tree = ast.parse((PACKAGE / "providers" / "_providers.py").read_text(encoding="utf-8"))
    modules = {node.module for node in ast.walk(tree)
               if isinstance(node, ast.ImportFrom) and node.module}
    assert not modules & {"_model_calls", "_sim_provider"}
    sim_provider = ast.parse((PACKAGE / "providers" / "_sim_provider.py").read_text("utf-8"))
    assert "_model_calls" not in {node.module for node in ast.walk(sim_provider)
                                  if isinstance(node, ast.ImportFrom)}
