"""The Analysis page's what-if, for any run (single or a sweep's): replay its recorded bids
under another threshold, recency penalty and recency window, with no model calls.

Why here: the Sweeps page had the only what-if, for sweep runs; a single run holds the same
bid log (groupchat_core.analysis: `counterfactual`, `whatif_grid`).
"""

from __future__ import annotations

import streamlit as st

from groupchat_core import CHAT_BOUNDS, NAMES_SPEAKERS, chat_default
from groupchat_core.analysis import counterfactual, recorded_turns, whatif_grid
from groupchat_ui.kit.store_access import RunData

from . import logic

FIELDS = ("threshold", "recency_penalty", "recency_window")
KEYS = {name: f"whatif_{name}" for name in FIELDS}
SHOWN_RUN = "whatif_of_run"  # the run whose own values the fields were last set to


def own_values(data: RunData) -> dict[str, float]:
    """The run's recorded threshold, penalty and window (the engine's defaults where absent)."""
    config = data.record.config
    return {name: float(config.get(name, chat_default(name))) for name in FIELDS}


def whatif(data: RunData) -> None:
    """Three fields (set to the run's own values when another run opens), the replay's one
    line and its turns, and the thresholds that give the recorded run."""
    st.subheader("What if?", anchor=False)
    own = own_values(data)
    run_id = str(data.info.get("run_id"))
    if st.session_state.get(SHOWN_RUN) != run_id:
        for name in FIELDS:
            st.session_state[KEYS[name]] = (int(own[name]) if name == "recency_window"
                                            else own[name])
        st.session_state[SHOWN_RUN] = run_id
    cols = st.columns(3)
    values = [_field(col, name) for col, name in zip(cols, FIELDS, strict=True)]
    threshold, penalty, window = values[0], values[1], int(values[2])
    strategy = data.record.config.get("strategy")
    prepared = recorded_turns(data.bids, data.turns, strategy)
    replay = counterfactual(data.bids, threshold, penalty, window, prepared=prepared)
    st.info(logic.whatif_text(replay, len(prepared)), icon=":material/alt_route:")
    st.dataframe(logic.replay_table(replay), hide_index=True, key="whatif_replay")
    grid = whatif_grid(data.bids, sorted({*logic.WHATIF_THRESHOLDS, threshold}), [penalty],
                       [window], turns_log=data.turns, strategy=strategy)
    st.caption(logic.same_run_thresholds(grid))
    st.caption("No model calls: each turn is re-selected from the recorded bids, exact up to "
               "the first turn that changes; it assumes a bid does not depend on the numbers "
               "in the prompt (true for sim/ agents, an approximation for LLMs).")
    if strategy in NAMES_SPEAKERS:
        st.caption(f"This run's strategy, {strategy}, names its speakers without reading "
                   "threshold, penalty or window: every value gives the recorded run.")


def _field(col: st.delta_generator.DeltaGenerator, name: str) -> float:
    bound = CHAT_BOUNDS[name]
    if name == "recency_window":
        return float(col.number_input(name, int(bound.low), int(bound.high), step=1,
                                      key=KEYS[name]))
    return float(col.number_input(name, float(bound.low), float(bound.high), step=0.05,
                                  format="%.2f", key=KEYS[name]))
