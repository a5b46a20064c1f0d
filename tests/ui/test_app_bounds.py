"""Declared once (issue 25 §2): the dashboard's defaults, bounds and statuses are the core's.
The Run form refuses a value outside the engine's range in one line naming it (a threshold of 5
made Start do nothing: issue 21); help texts, the Runs filter and the sweep grid read the same
table; no status set, default or masking rule is spelled a second time in the dashboard."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from groupchat_core import (
    AGENT_BOUNDS,
    CHAT_BOUNDS,
    JOB_TERMINAL,
    PROCESS_BOUNDS,
    RUN_ENDED,
    SWEEP_BOUNDS,
    SWEEP_RESUMABLE,
    Agent,
    ChatConfig,
    ConfigError,
    GroupChat,
    chat_default,
    set_max_inflight_calls,
)
from groupchat_core.store import RunStore
from groupchat_ui.analysis import logic as analysis_logic
from groupchat_ui.kit import jobs as job_registry
from groupchat_ui.run import logic as run_logic
from groupchat_ui.sweeps import logic as sweep_logic
from tests.helpers import ROOT
from tests.helpers.app_helpers import fill, goto, preset_run_form, session

STATUS_WORDS = {"queued", "running", "finished", "cancelled", "error", "interrupted",
                "stopped_budget"}


def test_the_run_form_names_the_engines_range_and_refuses_a_value_outside_it_in_one_line(
        app: AppTest):
    preset_run_form(app)
    for name in ("threshold", "recency_penalty", "max_loops", "recency_window"):
        help_text = app.number_input(key=f"run_param_{name}").help
        assert CHAT_BOUNDS[name].text() in help_text, (name, help_text)
        assert f"default is {chat_default(name):g}" in help_text
    for name, value in (("threshold", 5.0), ("threshold", -3.0), ("recency_penalty", 5.0)):
        in_range = {"run_param_threshold": 0.5, "run_param_recency_penalty": 0.3}
        fill(app, **{**in_range, f"run_param_{name}": value})  # one value out of range
        app.button(key="start_run").click().run()
        assert not app.exception, [e.value for e in app.exception]
        errors = [e.value.replace("\\_", "_") for e in app.error]  # shown as markdown
        assert any(f"{name} must be a number from -1 to 2, got {value}" in e for e in errors), \
            errors
        assert all("\n" not in e for e in errors)
        assert RunStore().list_runs().empty  # nothing started
        assert not session(app).job_ids, "a job was started"


def test_the_runs_filter_sweep_agent_and_settings_forms_take_their_ranges_from_the_core(
        app: AppTest):
    goto(app, "runs")
    bound = CHAT_BOUNDS["threshold"]
    assert app.slider(key="filter_threshold").value == (bound.low, bound.high)
    assert app.slider(key="filter_max_loops").value == (1, CHAT_BOUNDS["max_loops"].high)
    for page, key, bound in (("sweeps", "sw_max_loops", CHAT_BOUNDS["max_loops"]),
                             ("sweeps", "sw_repeats", SWEEP_BOUNDS["repeats"]),
                             ("sweeps", "sw_concurrency", SWEEP_BOUNDS["concurrency"]),
                             ("agents", "agent_form_temperature", AGENT_BOUNDS["temperature"]),
                             ("settings", "pref_inflight", PROCESS_BOUNDS["max_inflight_calls"])):
        widget = goto(app, page).number_input(key=key)
        assert (widget.min, widget.max) == (bound.low, bound.high), key
    with pytest.raises(ConfigError, match=r"limit must be an integer <= 1,024 \(its docu"):
        set_max_inflight_calls(2000)


def test_the_engine_refuses_what_the_form_refuses():
    agents = [Agent(agent_name=n, model_name="sim/balanced") for n in ("A", "B")]
    with pytest.raises(ConfigError, match=r"threshold must be a number from -1 to 2, got 5"):
        GroupChat(agents=agents, threshold=5)
    for name in ("threshold", "recency_penalty", "recency_window"):
        assert sweep_logic.BOUNDS[name] == (CHAT_BOUNDS[name].low, CHAT_BOUNDS[name].high)


def test_the_live_view_falls_back_to_the_engines_defaults():
    """An older snapshot's config lacks the numbers: the live view used 0.0 for a 0.3 penalty."""
    defaults = ChatConfig()
    assert run_logic.floor_settings({}) == (defaults.threshold, defaults.recency_penalty)
    assert run_logic.floor_settings({"threshold": 0.4, "recency_penalty": 0.1}) == (0.4, 0.1)


def test_status_sets_are_the_cores():
    assert job_registry.TERMINAL == JOB_TERMINAL
    assert analysis_logic.ENDED == RUN_ENDED
    assert sweep_logic.RESUMABLE == SWEEP_RESUMABLE


def _sources() -> Iterator[Path]:
    for folder in ("groupchat_core", "groupchat_ui", "app_pages"):
        yield from (ROOT / folder).rglob("*.py")
    yield ROOT / "streamlit_app.py"


def _string_sets(tree: ast.AST) -> Iterator[set[str]]:
    """Every tuple, list or set of string constants (a Literal[...]'s too)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            items = node.elts
        else:
            continue
        if items and all(isinstance(i, ast.Constant) and isinstance(i.value, str) for i in items):
            yield {i.value for i in items}  # type: ignore[attr-defined]


def test_every_status_set_is_declared_once_in_the_core():
    """Three or more status words together are a status set: only _statuses.py spells one."""
    spelled = sorted(str(path.relative_to(ROOT)) for path in _sources()
                     if path.name != "_statuses.py"
                     and any(len(words & STATUS_WORDS) >= 3
                             for words in _string_sets(ast.parse(path.read_text("utf-8")))))
    assert not spelled, f"status sets spelled outside groupchat_core/_statuses.py: {spelled}"


def test_the_dashboard_copies_no_default_of_a_chat_setting():
    """`config.get("recency_penalty", 0.0)`: a number copied beside a setting's name drifts."""
    copies = []
    for path in (ROOT / "groupchat_ui").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "get" and len(node.args) == 2
                    and isinstance(node.args[0], ast.Constant)
                    and node.args[0].value in ChatConfig.model_fields
                    and isinstance(node.args[1], ast.Constant)
                    and isinstance(node.args[1].value, int | float)):
                copies.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            if isinstance(node, ast.FunctionDef):  # def chart(..., threshold: float = 0.5)
                args = node.args.args[len(node.args.args) - len(node.args.defaults):]
                copies += [f"{path.relative_to(ROOT)}:{node.lineno} {a.arg}"
                           for a, d in zip(args, node.args.defaults, strict=True)
                           if a.arg in ChatConfig.model_fields and isinstance(d, ast.Constant)
                           and isinstance(d.value, int | float)
                           and not isinstance(d.value, bool)]
    assert not copies, f"defaults copied into the dashboard: {copies}"


def test_the_dashboard_masks_only_with_the_cores_function():
    """One masking function (min length 8, in the core); the dashboard spells no mask."""
    own = []
    for path in (ROOT / "groupchat_ui").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.FunctionDef) and any(
                    word in node.name.lower() for word in ("mask", "redact", "scrub")):
                calls = {c.func.id for c in ast.walk(node)
                         if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
                if "mask_secrets" not in calls:
                    own.append(f"{path.relative_to(ROOT)}:{node.name}")
            if isinstance(node, ast.Constant) and node.value == "***":
                own.append(f"{path.relative_to(ROOT)}:{node.lineno} spells the mask")
    assert not own, own


def test_the_declarations_are_leaves_every_layer_may_import():
    """Only the standard library, so every layer reads them without an import cycle."""
    for name in ("_statuses.py", "_bounds.py"):
        tree = ast.parse((ROOT / "groupchat_core" / name).read_text("utf-8"))
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                     for alias in node.names}
        assert imported <= {"__future__", "math", "collections.abc", "dataclasses", "types",
                            "typing"}, (name, imported)
