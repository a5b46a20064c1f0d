"""The Analysis page's outcome panel: did the group get it right (extracted answer, expected
answer, correct or score, scorer, each agent's vote), and whether sims took part; and, across
every scored run in the store, accuracy, cost per correct answer and equality against outcome.

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
from groupchat_core.store import RunStore
from groupchat_core.sweeps import accuracy_table, equality_outcome, runs_outcomes
from groupchat_ui.kit.outcome_charts import EQUALITY, equality_chart
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


def across_runs(store: RunStore) -> None:
    """Every scored run in the store: accuracy with its Wilson interval, calls and tokens per
    correct answer, and turn-taking equality against outcome (numbers: groupchat_core.sweeps)."""
    frame = runs_outcomes(store)
    if frame.empty:
        return
    with st.expander(f"Outcomes across scored runs ({len(frame)})", icon=":material/insights:"):
        if frame["simulated"].any():
            st.caption(f":material/science: {int(frame['simulated'].sum())} of {len(frame)} "
                       "runs are simulated (sim/ agents answer with a declared accuracy).")
        table = accuracy_table(frame, by=[])
        row = table.iloc[0]
        if row["n"]:
            st.markdown(f"Accuracy **{row['accuracy']:.0%}** ({int(row['correct'])} of "
                        f"{int(row['n'])} finished scored runs; 95% Wilson interval "
                        f"{row['ci_low']:.0%}–{row['ci_high']:.0%}) · calls per correct "
                        f"answer {_per(row['calls_per_correct'])} · tokens per correct answer "
                        f"{_per(row['tokens_per_correct'])}")
        equality = st.selectbox("Turn-taking equality", list(EQUALITY), key="an_eq_metric",
                                format_func=lambda m: EQUALITY[m])
        outcome = "score" if frame["scorer"].eq("judge").any() else "correct"
        points, result = equality_outcome(frame, equality, outcome)
        st.plotly_chart(equality_chart(points, result, equality, outcome, None),
                        key="an_eq_chart")
        st.caption(f"{result.text(equality, outcome)} One point per finished scored run. "
                   "A correlation is not a cause; runs of different tasks and settings are "
                   "pooled here (a sweep compares like with like: the Sweeps page's Outcomes "
                   "tab).")


def _per(value: float) -> str:
    return "–" if value != value else f"{value:,.1f}"
