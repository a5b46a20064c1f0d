"""The docs and the texts users read stay true for someone who installed the package with pip.

A pip user has the command (`groupchat-lab`), its --help, the dashboard and the error messages,
but none of the repository's files (README.md, docs/, examples/, the Makefile, ...): a help text
or an error that sends them to one points nowhere. The checks read the source, so they need no
install and no dashboard.

Private imports (`_agent`, `_version`): units or test hooks with no public name; everything public
comes from the public API.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from groupchat_core import Agent, ConfigError
from groupchat_core._agent import REFERENCE_ALIASES, REFERENCE_IGNORED
from groupchat_ui.sweeps.logic import EXECUTORS
from tests.helpers import ROOT

# What the wheel ships (app_pages and streamlit_app.py inside groupchat_ui/_app), and what is no
# part of the repository (git-ignored folders).
SHIPPED = {"groupchat_core", "groupchat_ui", "app_pages", "streamlit_app.py"}
NOT_IN_REPO = {"data", "build", "dist", "artifacts"}
USER_CODE = ("groupchat_core", "groupchat_ui", "app_pages", "streamlit_app.py")


def _docs() -> list[Path]:
    return [*ROOT.glob("*.md"), *(ROOT / "docs").rglob("*.md")]


def test_the_docs_never_call_the_command_groupchat() -> None:
    # "groupchat" alone, as a word (not groupchat-lab, groupchat_core, groupchat.db, a db name)
    alone = re.compile(r"(?<![\w/.@-])groupchat(?![\w.-])")
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}" for path in _docs()
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if alone.search(line)]
    assert not found, "\n".join(found)


def _repo_only_names() -> re.Pattern[str]:
    """A pattern of the repository's own files and folders that no wheel carries, and of the
    Makefile's targets (`make run`), which need a clone."""
    names = [p for p in ROOT.iterdir() if not p.name.startswith(".")
             and p.name not in SHIPPED | NOT_IN_REPO and not p.name.endswith(".egg-info")]
    words = [re.escape(p.name) + ("/" if p.is_dir() else r"\b") for p in names]
    words += [re.escape(p.stem) + r"\b" for p in names if p.suffix == ".md"]  # "the README's"
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = re.findall(r"^([a-z][\w-]*):", makefile, flags=re.MULTILINE)
    assert {"run", "setup", "llm"} <= set(targets)
    words.append(r"make (?:" + "|".join(map(re.escape, targets)) + r")\b")
    return re.compile(r"(?<![\w/.-])(?:" + "|".join(words) + ")")


def _user_strings(path: Path) -> Iterator[tuple[int, str]]:
    """Every string literal of a module except docstrings (help, labels, messages, f-string
    parts) with a space in it: what a user reads on a terminal or a page, not a bare name the
    code looks for (a clone is found by its "pyproject.toml")."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and id(node) not in docstrings and re.search(r"\s", node.value)):
            yield node.lineno, node.value


def test_no_user_facing_text_points_to_a_file_only_a_clone_has() -> None:
    repo_only = _repo_only_names()
    modules = [p for name in USER_CODE
               for p in ([ROOT / name] if name.endswith(".py") else (ROOT / name).rglob("*.py"))]
    assert len(modules) > 50
    found = []
    for path in modules:
        for line, text in _user_strings(path):
            hit = repo_only.search(text)
            # `make setup` is fine where the text says it is a clone's (a pip user skips it)
            if hit and not (hit.group().startswith("make ") and "clone" in text):
                found.append(f"{path.relative_to(ROOT)}:{line}: {hit.group()!r} in {text!r}")
    assert not found, "\n".join(found)


def test_the_pattern_finds_what_it_should() -> None:
    repo_only = _repo_only_names()
    for text in ("fields: docs/engine.md", "see the README's Deploy", "README.md, section",
                 "run `make llm` first", "examples/debate.yaml", "see CONTRIBUTING.md"):
        assert repo_only.search(text), text
    for text in ("groupchat-lab serve", "make them distinct", "data/groupchat.db",
                 "python -m groupchat_core.testing.local_llm install", "readme"):
        assert not repo_only.search(text), text


def test_the_streamlit_config_cites_only_files_in_the_repo() -> None:
    config = (ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8")
    cited = re.findall(r"[\w./-]+\.md\b", config)
    assert [name for name in cited if not (ROOT / name).is_file()] == []


def test_the_sweeps_doc_describes_the_pages_executor_choice() -> None:
    text = " ".join((ROOT / "docs" / "sweeps.md").read_text(encoding="utf-8").split())
    view = (ROOT / "groupchat_ui" / "sweeps" / "view.py").read_text(encoding="utf-8")
    assert '"Run cells on"' in view
    assert '"Run cells on" chooses this server' in text
    assert all(label in text for label in EXECUTORS.values())
    assert not re.search(r"no executor choice", text, flags=re.IGNORECASE)


def test_the_changelog_starts_at_this_version() -> None:
    from groupchat_core._version import APP_VERSION

    heads = re.findall(r"^## \[([^\]]+)\]", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"),
                       flags=re.MULTILINE)
    assert heads == ["Unreleased", APP_VERSION]


def test_contributing_names_only_what_exists() -> None:
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for command in ("make run", "make test"):  # the README's two commands
        assert f"    {command} " in readme and f"    {command} " in text
    targets = set(re.findall(r"^([a-z][\w-]*):", (ROOT / "Makefile").read_text(encoding="utf-8"),
                             flags=re.MULTILINE))
    named = set(re.findall(r"\bmake ([a-z][\w-]*)", text))
    assert named and named <= targets
    # paths in backticks (`docs/`, `groupchat_core/store/`) and in commands (tests/...py)
    paths = {p.rstrip("/") for p in re.findall(r"`([\w.-]+/[\w./-]*)`", text)}
    paths -= {"data", "sim"}  # the git-ignored store folder; the sim/ model prefix
    paths |= set(re.findall(r"\b(tests/[\w/]+\.py)\b", text))
    assert "tests/e2e/test_smoke_browser.py" in paths and "groupchat_core/store" in paths
    assert sorted(p for p in paths if not (ROOT / p).exists()) == []


def test_the_unknown_keyword_error_lists_the_reference_keywords_itself() -> None:
    with pytest.raises(ConfigError) as caught:
        Agent(agent_name="A", temprature=0.2)
    message = str(caught.value)
    assert "did you mean 'temperature'?" in message and "README" not in message
    assert all(name in message for name in [*REFERENCE_ALIASES, *REFERENCE_IGNORED])


DOC_FILES = ("README.md", "BENCHMARKS.md", "CONTRIBUTING.md", "CHANGELOG.md", "docs")
CODE = ("groupchat_core", "groupchat_ui", "app_pages", "bench", "tests")  # docstrings cite too
TEST_PATH = re.compile(r"(?<![\w/.])tests/[\w/]*?test_\w+\.py")


def _citing() -> Iterator[Path]:
    for name in DOC_FILES:
        yield from [ROOT / name] if (ROOT / name).is_file() else sorted((ROOT / name).rglob("*.md"))
    for name in CODE:
        yield from (p for p in sorted((ROOT / name).rglob("*.py")) if p != Path(__file__))


def test_every_test_file_the_docs_and_the_code_cite_exists() -> None:
    """A claim names the test that backs it; after the tests moved into folders by area, and
    merged, a path left as `tests/test_x.py` pointed nowhere."""
    cited = {(str(path.relative_to(ROOT)), m.group(0)) for path in _citing()
             for m in TEST_PATH.finditer(path.read_text(encoding="utf-8"))}
    assert cited, "the pattern found no cited test at all"
    missing = sorted(f"{doc}: {test}" for doc, test in cited if not (ROOT / test).is_file())
    assert missing == []
