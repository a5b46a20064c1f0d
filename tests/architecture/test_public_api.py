"""The public API is real: the dashboard and the benchmarks use only it, every exported name
resolves, the package's names are pinned, and the error tree drawn in _errors.py is the true one.

Public: `groupchat_core` and the subpackages `store`, `sweeps`, `analysis`, `testing`. Any module
path segment starting with `_` is private (httpx style), and so is any name starting with `_`.

Private imports (`groupchat_core._version`): units or test hooks with no public name; everything
public comes from the public API.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

import groupchat_core
from groupchat_core import (
    Agent,
    CliError,
    ConfigError,
    GroupChat,
    GroupChatError,
    ModelCallError,
    StoreError,
    set_max_inflight_calls,
)
from groupchat_core.analysis import whatif_pivot
from tests.helpers import ROOT

PUBLIC_PACKAGES = ("groupchat_core", "groupchat_core.store", "groupchat_core.sweeps",
                   "groupchat_core.analysis", "groupchat_core.testing")
CLIENTS = ("groupchat_ui", "app_pages", "bench", "streamlit_app.py")  # code outside the engine


def private_uses(source: str) -> list[str]:
    """Every use of a private part of groupchat_core in one file's source: imports of `_`
    modules or `_` names, and attribute chains like `groupchat_core.engine._loop.x`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] == "groupchat_core"
                      and any(part.startswith("_") for part in a.name.split("."))]
        elif (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
              and node.module.split(".")[0] == "groupchat_core"):
            if any(part.startswith("_") for part in node.module.split(".")):
                found.append(node.module)
            found += [f"{node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            chain = node.value
            while isinstance(chain, ast.Attribute):
                chain = chain.value
            if isinstance(chain, ast.Name) and chain.id == "groupchat_core":
                found.append(ast.unparse(node))
    return found


def client_files() -> list[Path]:
    files: list[Path] = []
    for name in CLIENTS:
        path = ROOT / name
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return files


def test_the_private_use_check_catches_every_form():
    source = """
import groupchat_core.engine._loop
import groupchat_core
from groupchat_core._records import Bid
from groupchat_core.store._connect import safe_url
from groupchat_core import _errors
from groupchat_core.sweeps import run_sweep
from groupchat_ui.job_registry import JobRegistry
from . import _local
groupchat_core.providers._model_calls.litellm_module()
groupchat_core.prepare_litellm()
"""
    assert private_uses(source) == [
        "groupchat_core.engine._loop", "groupchat_core._records", "groupchat_core.store._connect",
        "groupchat_core._errors", "groupchat_core.providers._model_calls"]


def test_dashboard_pages_and_benchmarks_use_only_the_public_api():
    files = client_files()
    assert len(files) > 20  # the dashboard and the benchmarks were found
    bad = {str(p.relative_to(ROOT)): uses for p in files
           if (uses := private_uses(p.read_text(encoding="utf-8")))}
    assert not bad, f"private groupchat_core parts used outside the engine: {bad}"


@pytest.mark.parametrize("package", PUBLIC_PACKAGES)
def test_every_exported_name_resolves(package: str):
    module = importlib.import_module(package)
    names = module.__all__
    assert len(names) == len(set(names)) and names, package
    assert not [n for n in names if n.startswith("_")]
    missing = [n for n in names if not hasattr(module, n)]
    assert not missing, f"{package}.__all__ lists names it does not have: {missing}"
    namespace: dict[str, object] = {}
    exec(f"from {package} import *", namespace)  # the star import users may write
    assert set(names) <= set(namespace)


def test_the_package_api_is_pinned():
    """Changing the public surface is a decision: update this list deliberately."""
    assert sorted(groupchat_core.__all__) == sorted([
        # the engine
        "Agent", "GroupChat", "ChatConfig", "ChatSpec", "DEFAULT_MODEL", "DEFAULT_BID_PROMPT",
        # named bid prompts and the choices of what a bidder sees (issue 43)
        "BID_PROMPT_PRESETS", "CHAT_CHOICES",
        "OUTPUT_TYPES", "RESPOND_TOOL", "FORCED_RESPOND_CHOICE", "select_speaker",
        "format_decimal", "dump_spec", "load_spec", "load_spec_text",
        # records and the events observers receive
        "Bid", "Message", "RunRecord", "Turn", "Event", "RunStarted", "TurnStarted",
        "BidReceived", "BidDelta", "SpeakerSelected", "LullReached", "MessagePosted", "Observer",
        "TurnCompleted", "RunFinished", "format_cost",  # "unknown" cost is not zero
        # one fold of a run's live events (issue 40)
        "LiveRun", "LiveState",
        # errors
        "GroupChatError", "ConfigError", "CliError", "ModelCallError", "StoreError",
        # the shared background loop and the in-flight call limit
        "BackgroundLoop", "background_loop", "max_inflight_calls", "set_max_inflight_calls",
        # simulated models and litellm (warm_up: a server's model-call path, before sessions);
        # tool-choice modes remembered per provider
        "SIM_MODELS", "SIM_NOTE", "is_sim_model", "runs_in_process", "prepare_litellm",
        "warm_up", "RememberedMode",
        "remembered_modes", "forget_remembered_modes",
        # checks before spending: provider keys, and per-model request/token rate limits
        "check_credentials", "set_rate_limit",
        # keys bound to endpoints: which api_base may receive a key the agent did not bring
        "TRUSTED_BASES_ENV", "endpoint_trusted", "normalise_base",
        # exports, bundles and agents files
        "bids_csv", "transcript_markdown", "bundle_json", "import_bundle", "dump_agents",
        "load_agents_text",
        # which code wrote a record
        "app_version", "litellm_version",
        # the one masking function, and the secrets it masks in every chat's output
        "mask_secrets", "hold_secrets",
        # untrusted text made inert: control, bidi and zero-width characters as visible escapes
        # (the CLI, the exports and the dashboard all show model output through it)
        "terminal_text",
        # the one provider interface: what GroupChat(providers=...) is given
        "Provider", "BidRequest", "ModelReply", "reply_from_arguments",
        # people in the room (issue 22): the participant, its actions, the live room
        "Human", "HumanAction", "HumanCallback", "HumanPrompt", "HAND_SCORE", "RaiseHand",
        "LowerHand", "SetBid", "Pass", "Post", "Pick", "Room", "RoomSnapshot", "LiveBid",
        "PersonState",
        # statuses, bounds and defaults, each declared once (issue 25 §2)
        "RUN_STATUSES", "RUN_ENDED", "RunStatus", "SWEEP_STATUSES", "SWEEP_RESUMABLE",
        "SweepStatus", "JOB_STATUSES", "JOB_TERMINAL", "JobStatus", "CHAT_BOUNDS",
        "AGENT_BOUNDS", "SWEEP_BOUNDS", "PROCESS_BOUNDS", "Bound", "chat_default",
        # every chat setting declared once: form, CLI flags, help, docs table (issue 40)
        "CHAT_SETTINGS", "ChatSetting",
        "TOOL_CHOICE_MODES", "STRATEGIES", "NAMES_SPEAKERS",
    ])


def test_the_checkout_version_matches_pyproject():
    """An uninstalled checkout reports APP_VERSION; it must be the version pyproject builds."""
    import tomllib

    from groupchat_core import _version

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert _version.APP_VERSION == project["version"]
    assert groupchat_core.__version__ == groupchat_core.app_version()
    assert groupchat_core.litellm_version() == "1.106.2"  # the vetted pin in requirements.txt


def test_every_public_function_of_the_package_says_what_it_is_for():
    functions = [n for n in groupchat_core.__all__
                 if inspect.isfunction(getattr(groupchat_core, n))]
    assert "prepare_litellm" in functions and "bids_csv" in functions
    assert not [n for n in functions if not inspect.getdoc(getattr(groupchat_core, n))]


def test_importing_the_package_stays_light():
    """Exports that need the store load on first use, so `import groupchat_core` skips
    SQLAlchemy (the cold-start benchmark counts the import)."""
    import subprocess
    import sys

    code = ("import sys, groupchat_core; assert 'sqlalchemy' not in sys.modules; "
            "from groupchat_core import bids_csv; assert 'sqlalchemy' in sys.modules; "
            "assert bids_csv.__module__ == 'groupchat_core.exports._tables'")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_sim_models_are_named_one_way():
    assert groupchat_core.SIM_MODELS[0] == "sim/balanced"
    assert all(groupchat_core.is_sim_model(m) for m in groupchat_core.SIM_MODELS)
    assert not groupchat_core.is_sim_model("openai/sim/x")
    assert not groupchat_core.is_sim_model("gpt-4o-mini")


# --- the error tree -----------------------------------------------------------------------


def drawn_tree() -> dict[str, str]:
    """child -> parent, as drawn in _errors.py's docstring."""
    doc = importlib.import_module("groupchat_core._errors").__doc__ or ""
    lines = [m.group(1, 2) for m in re.finditer(r"^    ([│├└─ ]*)(\w+Error)\b", doc, re.M)]
    tree, stack = {}, []
    for prefix, name in lines:
        depth = len(prefix) // 4
        del stack[depth:]
        if stack:
            tree[name] = stack[-1]
        stack.append(name)
    return tree


def test_the_drawn_error_tree_is_the_real_one():
    errors = importlib.import_module("groupchat_core._errors")
    real = {name: cls.__mro__[1].__name__ for name, cls in vars(errors).items()
            if inspect.isclass(cls) and issubclass(cls, GroupChatError)
            and cls is not GroupChatError}
    assert drawn_tree() == real == {"ConfigError": "GroupChatError", "CliError": "GroupChatError",
                                    "ModelCallError": "GroupChatError",
                                    "StoreError": "GroupChatError"}
    assert issubclass(ConfigError, ValueError)  # bad values stay catchable as ValueError
    for cls in (CliError, StoreError, ModelCallError):
        assert not issubclass(cls, ValueError)


def test_errors_the_dashboard_can_meet_are_in_the_tree():
    with pytest.raises(ConfigError, match="integer >= 1"):
        set_max_inflight_calls(0)
    import pandas as pd

    grid = pd.DataFrame({"recency_window": [1, 2], "recency_penalty": [0.0, 0.0],
                         "threshold": [0.5, 0.5], "lull_turn": [None, None]})
    with pytest.raises(ConfigError, match="not a what-if column"):
        whatif_pivot(grid, "bogus")
    with pytest.raises(ConfigError, match="several recency windows"):
        whatif_pivot(grid, "lull_turn")


def test_a_refused_model_call_is_a_model_call_error_recorded_on_the_bid(monkeypatch):
    """Tests block remote calls (conftest): the refusal is data on each bid, not a crash."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-dummy-key-for-the-credentials-check")
    chat = GroupChat(agents=[Agent(agent_name="A", model_name="gpt-4o-mini"),
                             Agent(agent_name="B", model_name="openai/x",
                                   api_base="https://example.invalid/v1")])
    chat.run("t")
    record = chat.last_run
    assert record is not None and record.stop_reason == "error"
    assert all(b.error and b.error.startswith("ModelCallError: real model calls are blocked")
               for b in record.bids)
