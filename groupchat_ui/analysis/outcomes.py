"""The Analysis page's outcome panel: did the group get it right (extracted answer, expected
answer, correct or score, scorer, each agent's vote), and whether sims took part.

Why its own module: the outcome is the run's verdict, shown under the header whatever tab is
open; its text comes from the engine's `outcome_text` (the one the Markdown export writes), so
the page and the exports say the same. Answers and votes are model output: escaped.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from groupchat_core import is_sim_model
from groupchat_core.outcomes import Outcome
from groupchat_ui.kit.safety import escape_markdown
from groupchat_ui.kit.store_access import RunData

SIMULATED = ("Simulated: sim/ agents (offline simulations, not language models) took part in "
             "this run; its bids, speakers and outcome describe the simulator, not an LLM.")


def simulated(spec: dict[str, Any]) -> bool:
    """Whether any agent of a run's spec is a sim (the rule the CLI and exports use)."""
    return any(is_sim_model(str(a.get("model_name") or "")) for a in spec.get("agents", []))


def verdict(outcome: Outcome) -> str:
    """correct / wrong / not scored, with the judge's score when there is one."""
    word = {True: "correct", False: "wrong", None: "not scored"}[outcome.correct]
    if outcome.scorer == "judge" and outcome.score is not None:
        return f"{word} (score {outcome.score:g})"
    return word


def facts(outcome: Outcome) -> pd.DataFrame:
    """The outcome as a two-column table: what the page lists under the verdict."""
    rows = [("answer", outcome.answer if outcome.answer is not None else "none"),
            ("expected", outcome.expected if outcome.expected is not None else "(rubric)"),
            ("result", verdict(outcome)), ("scorer", outcome.scorer),
            ("answer from", "majority vote" if outcome.answer_from == "vote"
             else "final message"), ("task", outcome.task_id)]
    if outcome.judge is not None:
        rows.append(("judge", f"{outcome.judge.model}, {outcome.judge.calls} call(s)"))
    return pd.DataFrame(rows, columns=["", "value"])


def panel(data: RunData) -> None:
    """The simulated note and, for a scored task, the outcome with each agent's vote."""
    if simulated(data.info.get("spec", {})):
        st.caption(f":material/science: {SIMULATED}")
    outcome = data.record.outcome
    if outcome is None:
        return
    answer = escape_markdown(outcome.answer if outcome.answer is not None else "none")
    text = f"Outcome: **{verdict(outcome)}**, answer {answer}"
    if outcome.expected is not None:
        text += f", expected {escape_markdown(outcome.expected)}"
    text += f" ({escape_markdown(outcome.scorer)} scorer)"
    show = st.warning if outcome.correct is None else (
        st.success if outcome.correct else st.error)
    show(text, icon=":material/task_alt:" if outcome.correct else ":material/cancel:")
    with st.expander("Outcome details", expanded=False), st.container(key="outcome_box"):
        st.dataframe(facts(outcome), hide_index=True, key="outcome_facts")
        if outcome.votes:
            st.dataframe(pd.DataFrame({"agent": list(outcome.votes),
                                       "last stated answer": [v if v is not None else "none"
                                                              for v in outcome.votes.values()]}),
                         hide_index=True, key="outcome_votes")
