"""The Run page's live view reduced to its shape, for bench/blank_page.py (not part of the app).

A "job" of `?dur=` seconds starts on Start; while it runs the view redraws on a timer of
`?every=` seconds: a head (status, a panel with a changing number of rows and a button), a
transcript of chat messages in a fixed-height scroll box, a floor with a table. When the head
sees the job end it draws the final status and asks for a full run (as live_view.py does).
`?v=base`: three sibling timed fragments (the live view before 2026-12-06); `?v=single`: one
timed fragment around all of it (the live view since).
"""
import time

import streamlit as st

DUR = float(st.query_params.get("dur", "3"))
EVERY = float(st.query_params.get("every", "0.5"))
VARIANT = st.query_params.get("v", "base")
ss = st.session_state
if st.button("Start", key="start"):
    ss.t0 = time.time()
t0 = ss.get("t0")


def done() -> bool:
    return t0 is not None and time.time() - t0 >= DUR


first_done = done()
running = t0 is not None and not first_done
every = EVERY if running else None
st.caption(f"full run at {time.time():.2f}")


def head_body():
    if running and done():
        with st.container(key="ending"):
            st.caption("status: finished")
        st.rerun()
    st.caption("status: " + ("running" if running else "finished" if t0 else "idle"))
    if running:
        with st.container(key="panel", border=True):
            n = int((time.time() - t0) * 4)
            for i in range(n % 5):
                st.markdown(f"bid {i}")
            st.button("Pick", key=f"pick_{n // 10}")


def transcript_body():
    n = int(((time.time() if not first_done else t0 + DUR) - (t0 or time.time())) * 3)
    for i in range(n):
        with st.chat_message("ai"):
            st.markdown(f"message {i}")


def floor_body():
    st.caption(f"floor {time.time():.1f}")
    st.dataframe({"a": list(range(int(time.time()) % 7))})


def layout(transcript, floor):
    left, right = st.columns([5, 4])
    with left, st.container(height=300, autoscroll=True, border=False):
        transcript()
    with right:
        floor()


if VARIANT == "single":
    @st.fragment(run_every=every)
    def live():
        head_body()
        layout(transcript_body, floor_body)
    live()
else:
    head = st.fragment(run_every=every)(head_body)
    transcript = st.fragment(run_every=every)(transcript_body)
    floor = st.fragment(run_every=every)(floor_body)
    head()
    layout(transcript, floor)
