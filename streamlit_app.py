"""GroupChat Lab dashboard entry point (offline by default: sim/ agents, no key needed)."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import streamlit as st  # noqa: E402

from groupchat_core import Agent, GroupChat  # noqa: E402

DEBATE = [
    ("Optimist", "You argue for the benefits."),
    ("Pessimist", "You argue for the risks."),
    ("Realist", "You seek a balanced analysis."),
]

st.set_page_config(page_title="GroupChat Lab", page_icon="💬", layout="wide")
st.title("GroupChat Lab")
st.caption("Agents below are offline simulations (sim/ models), not language models.")

with st.form("debate"):
    task = st.text_input("Task", "Should we adopt AI for medical diagnosis?")
    threshold = st.slider("threshold", 0.0, 1.0, 0.5, 0.05)
    submitted = st.form_submit_button("Run debate")

if submitted:
    agents = [Agent(agent_name=n, system_prompt=p, model_name="sim/balanced") for n, p in DEBATE]
    chat = GroupChat(agents=agents, max_loops=10, threshold=threshold)
    chat.run(task)
    record = chat.last_run
    for message in record.messages:
        with st.chat_message("user" if message.score is None else "assistant"):
            label = message.role if message.score is None else (
                f"{message.role} (simulated) · score {message.score:.2f}")
            st.markdown(f"**{label}**")
            st.text(message.content)
    st.caption(f"stop reason: {record.stop_reason} · turns: {len(record.turns)}")
