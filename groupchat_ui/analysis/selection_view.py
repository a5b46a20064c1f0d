"""The Analysis page's "Did the floor go to the best candidate?": a judge model scores every
candidate message of the run's turns (groupchat_core.sweeps.judge_selection), only when the
button is pressed; answers are cached in the store, so a second look costs nothing."""

from __future__ import annotations

from typing import Any

import streamlit as st

from groupchat_core import is_sim_model
from groupchat_core.sweeps import (
    SelectionJudgement,
    calibration,
    frame_csv,
    judge_selection,
    selection_turns,
    summary_lines,
)
from groupchat_ui.kit.safety import escape_markdown
from groupchat_ui.kit.store_access import RunData, store

RESULT = "selection_result"  # (run id, judge model, base) -> the judgement, in this session
MODEL, BASE = "selection_judge", "selection_judge_base"


def _judge(data: RunData, model: str, base: str | None) -> SelectionJudgement | None:
    try:
        return judge_selection([data.record], model, api_base=base, store=store())
    except Exception as exc:  # a bad model string or endpoint: one line, no traceback
        st.error(escape_markdown(f"The judge could not be asked: {exc}"))
        return None


def selection(data: RunData) -> None:
    """The judge's model and endpoint, the button, then the summary, the turns and the
    calibration table with their downloads."""
    st.subheader("Did the floor go to the best candidate?", anchor=False)
    st.caption("A judge model scores each turn's candidate messages for usefulness as the next "
               "message, blind to who wrote them and what they bid; then: was the winner its "
               "best, the regret, and how bids track its scores. Calls a model (one call per "
               "candidate; cached).")
    cols = st.columns([2, 2, 1], vertical_alignment="bottom")
    model = cols[0].text_input("Judge model", key=MODEL, placeholder="e.g. openai/gpt-4o-mini")
    base = cols[1].text_input("Judge endpoint (optional)", key=BASE,
                              placeholder="http://127.0.0.1:8080/v1")
    run_id = str(data.info.get("run_id"))
    asked = (run_id, model.strip(), base.strip() or None)
    if cols[2].button("Judge", key="selection_go", disabled=not model.strip()):
        made = _judge(data, asked[1], asked[2])
        if made is not None:
            st.session_state[RESULT] = (asked, made)
    kept: Any = st.session_state.get(RESULT)
    if kept is None or kept[0] != asked:
        return
    judgement: SelectionJudgement = kept[1]
    if is_sim_model(judgement.judge_model):
        st.warning("A sim/ judge reads no text: its scores are seeded draws, not judgements.")
    for line in summary_lines(judgement):
        st.markdown(escape_markdown(line))
    turns = selection_turns(judgement.candidates)
    table = calibration(judgement.candidates)
    st.dataframe(turns, hide_index=True, width="stretch")
    st.dataframe(table, hide_index=True, width="stretch")
    left, right = st.columns(2)
    left.download_button("Turns (CSV)", frame_csv(turns), f"selection-turns-{run_id[:8]}.csv",
                         "text/csv", key="selection_turns_csv")
    right.download_button("Candidates (CSV)", frame_csv(judgement.candidates),
                          f"selection-candidates-{run_id[:8]}.csv", "text/csv",
                          key="selection_candidates_csv")
