"""One "runs in-process" check (issue 40 §4): the exported `runs_in_process` says what the
engine's provider choice does, for sims, a chat's own providers, shared fakes and litellm.

Private imports (provider_for, LITELLM): the engine's choice the public check must agree with.
"""

from __future__ import annotations

import groupchat_core
from groupchat_core import runs_in_process
from groupchat_core.providers._model_calls import LITELLM, provider_for
from groupchat_core.testing import ScriptedBids


def test_sims_and_given_providers_run_in_process_and_litellm_models_do_not():
    fake = ScriptedBids({}, shared=False)
    given = {"mine": fake}
    for model, chosen, expected in [
        ("sim/balanced", None, True),
        ("gpt-4o-mini", None, False),
        ("openai/gpt-4o-mini", None, False),
        ("openai/sim/x", None, False),
        ("mine/model", given, True),
        ("mine/model", None, False),
    ]:
        assert runs_in_process(model, chosen) is expected, model
        assert (provider_for(model, chosen) is not LITELLM) is expected, model


def test_the_one_sim_note_is_exported_and_the_dashboard_shows_that_one():
    from groupchat_ui.kit import providers
    from groupchat_ui.sweeps import logic

    assert "not language models" in groupchat_core.SIM_NOTE
    assert not hasattr(providers, "SIM_NOTE") and not hasattr(logic, "SIM_NOTE")
