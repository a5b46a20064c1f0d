"""One schema for every chat setting (issue 40 §4): the docs table, the CLI's `run` flags, the
dashboard's Run form and its help are built from groupchat_core.CHAT_SETTINGS and agree with
the engine's declarations (ChatConfig's defaults, CHAT_BOUNDS, the declared choices).

Private imports (`_chat_settings.docs_table`, `CLI_SETTINGS`, the CLI's `build_parser`): the
generators under test, which have no public name.
"""

from __future__ import annotations

import argparse
import re

from groupchat_core import CHAT_BOUNDS, CHAT_CHOICES, CHAT_SETTINGS, ChatConfig, chat_default
from groupchat_core._chat_settings import CLI_SETTINGS, docs_table
from groupchat_core.cli._main import build_parser
from groupchat_ui.run import logic
from groupchat_ui.run.form import PARAMS, RunForm
from tests.helpers import ROOT

BEGIN, END = "<!-- chat-settings:begin", "<!-- chat-settings:end -->"


def test_the_docs_table_is_the_schemas():
    text = (ROOT / "docs" / "engine.md").read_text(encoding="utf-8")
    start = text.index("\n", text.index(BEGIN)) + 1
    assert text[start:text.index(END)].strip() == docs_table(), (
        "docs/engine.md's chat settings table differs from the schema: paste "
        "groupchat_core._chat_settings.docs_table() between its markers")


def test_every_chat_setting_is_in_the_schema_with_the_engines_default_and_range():
    engine = {name for name, s in CHAT_SETTINGS.items() if s.engine}
    assert engine == set(ChatConfig.model_fields)
    for name in engine:
        setting = CHAT_SETTINGS[name]
        assert setting.default == chat_default(name)
        assert setting.bound is CHAT_BOUNDS.get(name)
        assert setting.summary and "|" not in setting.summary
    for name, choices in CHAT_CHOICES.items():
        assert CHAT_SETTINGS[name].choices == choices
        assert choices[0] == chat_default(name)  # the CLI's help says the first is the default


def _run_parser() -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["run"]


def test_the_clis_chat_flags_are_the_schemas_and_their_help_names_the_real_defaults():
    actions_by_dest = {a.dest: a for a in _run_parser()._actions}
    for setting in CLI_SETTINGS:
        action = actions_by_dest[setting.name]
        assert setting.flag in action.option_strings
        assert action.help == setting.cli_help()
        for named in re.findall(r"\(default ([\w.-]+)\)", action.help or ""):
            assert named in (str(setting.default), f"{setting.default:g}"
                             if isinstance(setting.default, float) else ""), setting.name
    flags = [s.flag for s in CLI_SETTINGS]
    assert {"--threshold", "--stream", "--human-window", "--show-tally"} <= set(flags)


def test_the_run_form_its_help_and_its_loader_follow_the_schema():
    in_form = [name for name, s in CHAT_SETTINGS.items() if s.form is not None]
    assert list(PARAMS) == in_form
    assert set(RunForm.model_fields) == {"task", "roster", "stream", *in_form}
    assert set(logic.PARAM_HELP) == set(in_form)
    for name in in_form:
        setting = CHAT_SETTINGS[name]
        assert logic.PARAM_HELP[name].startswith(setting.help.replace("{default}",
                                                                      str(setting.default)))
        if setting.bound is not None:
            assert logic.PARAM_HELP[name].endswith(f"default is {setting.default:g}.")
    engine = {name for name in in_form if CHAT_SETTINGS[name].engine}
    assert set(logic.default_params()) == engine | {"bid_cache"}  # off here, by the dashboard
