"""mypy covers the dashboard too, strict, as part of `make test` (issue 25 §7).

`make test` runs `mypy` with no arguments, so pyproject.toml decides what it checks: these tests
pin that it checks the engine, the dashboard, the pages and the entry point, strictly, and that
the only relaxations are for packages without types, each saying why.
"""

from __future__ import annotations

import re
import tomllib

from tests.helpers import ROOT

UNTYPED = {"litellm", "litellm.*", "plotly", "plotly.*"}  # no py.typed, no stubs package


def mypy_config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]


def test_mypy_checks_the_engine_and_the_dashboard_strictly():
    config = mypy_config()
    assert config["strict"] is True
    assert set(config["files"]) == {"groupchat_core", "groupchat_ui", "app_pages",
                                    "streamlit_app.py"}


def test_the_only_overrides_are_for_untyped_packages_and_say_why():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    for override in mypy_config().get("overrides", []):
        assert set(override["module"]) <= UNTYPED, override
        assert set(override) == {"module", "ignore_missing_imports"}, override  # nothing laxer
    blocks = text.split("[[tool.mypy.overrides]]")[1:]
    assert blocks and all("#" in block.split("module")[0] for block in blocks), \
        "every override says in a comment why it is needed"


def test_make_test_runs_mypy_from_the_config_before_the_suite():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    target = re.search(r"^test:.*?\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert target, "Makefile has a test target"
    steps = [line.strip() for line in target.group(1).splitlines()]
    assert "$(BIN)/mypy" in steps  # no arguments: pyproject's files and strictness apply
    assert steps.index("$(BIN)/mypy") < next(i for i, s in enumerate(steps) if "pytest" in s)


def test_the_dashboard_silences_no_type_error_without_saying_which():
    bare = [f"{path.relative_to(ROOT)}:{n}"
            for folder in ("groupchat_ui", "app_pages")
            for path in (ROOT / folder).rglob("*.py")
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if re.search(r"type:\s*ignore(?!\[)", line)]
    assert not bare, bare
