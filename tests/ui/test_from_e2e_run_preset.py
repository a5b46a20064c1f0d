"""The Run page's "Use preset" leaves the roster alone while its question is open (issue 21
item 5; moved from the browser tests, issue 39): "No" keeps the roster picked by hand, only
"Replace them" switches it to the preset's agents."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from groupchat_core import Agent
from groupchat_core.store import RunStore
from groupchat_ui.kit.presets import DEBATE_TRIO
from tests.helpers.app_helpers import goto, save_agents


def _roster(app: AppTest) -> list[str]:
    return [str(v).split(" · ")[0] for v in app.multiselect(key="run_roster").value]


def test_use_preset_switches_the_roster_only_once_its_question_is_answered_yes(app: AppTest):
    store = RunStore()  # GROUPCHAT_DB: this test's own SQLite file (tests/conftest.py)
    edited = DEBATE_TRIO.build_agents()[0]  # a preset agent the user changed: it asks
    save_agents(store, [Agent(agent_name="Mia", model_name="sim/balanced"),
                        Agent(agent_name="Noa", model_name="sim/balanced"),
                        edited.model_copy(update={"system_prompt": "edited"})])
    goto(app, "run")
    roster = app.multiselect(key="run_roster")
    roster.set_value([o for o in roster.options if o.split(" · ")[0] in ("Mia", "Noa")]).run()
    assert _roster(app) == ["Mia", "Noa"]
    app.selectbox(key="run_preset_choice").set_value(DEBATE_TRIO.name).run()
    app.button(key="use_preset").click().run()
    assert any("would replace your saved" in str(w.value) for w in app.warning)
    assert _roster(app) == ["Mia", "Noa"], "the roster switched before the question's answer"
    app.button(key="confirm_preset_no").click().run()
    assert not any("would replace your saved" in str(w.value) for w in app.warning)
    assert _roster(app) == ["Mia", "Noa"], "No switched the roster"
    app.button(key="use_preset").click().run()
    app.button(key="confirm_preset_yes").click().run()
    assert _roster(app) == [a.agent_name for a in DEBATE_TRIO.build_agents()]
