"""Rendering pieces shared by the pages: chat bubbles, the bidding floor, metric cards, notices.

Why one module: every place that shows an agent message goes through `bubble`, so untrusted
model output is always rendered by `safe_markdown` (no raw HTML, no remote images), and every
model is labelled the same way ("(simulated)" for sim/ models).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import streamlit as st

from groupchat_core import Bid, Message, RunRecord

from . import charts, views
from .providers import KeyWarning, failure_hint, model_label
from .safety import escape_markdown, redact, safe_markdown
from .state import SessionState

__all__ = ["bidding_floor", "bubble", "escape_markdown", "failure_errors", "key_warnings",
           "metric_cards", "notices", "safe_markdown", "status_line", "summary", "transcript"]

ModelInfo = Mapping[str, tuple[str, str | None]]  # agent -> (model, api_base)


def notices(session: SessionState) -> None:
    """Show (once) what callbacks queued: saved, deleted, imported, failed."""
    show = {"success": st.success, "error": st.error, "warning": st.warning, "info": st.info}
    for kind, text in session.take_notices():
        show.get(kind, st.info)(escape_markdown(text))


def status_line(status: str, job_id: str, turn: int, messages: int) -> None:
    """A stable, machine-readable line for browser tests and for people: `status: running`."""
    st.caption(f"status: {status} · job {job_id} · turn {turn} · messages {messages}")


def bubble(message: Message, *, model: str | None = None, turn: int | None = None,
           text: str | None = None, streaming: bool = False) -> None:
    """One chat message; agent text is untrusted, so it is rendered inert."""
    is_task = message.score is None
    with st.chat_message("user" if is_task else message.role,
                         avatar=":material/person:" if is_task else ":material/smart_toy:"):
        meta = [f"**{escape_markdown(message.role)}**"]
        if model:
            meta.append(escape_markdown(model_label(model)))
        if message.score is not None:
            meta.append(f"score {message.score:.2f}")
        if turn:
            meta.append(f"turn {turn}")
        st.markdown(" · ".join(meta))
        body = message.content if text is None else text
        st.markdown(safe_markdown(body) + (" ▌" if streaming else ""))


def transcript(messages: Sequence[Message], models: ModelInfo, *, live: bool,
               now: Any = None) -> None:
    """Every message in order; the newest agent reply streams in word by word while live."""
    for i, message in enumerate(messages):
        model = models.get(message.role, (None, None))[0] if message.score is not None else None
        newest = live and i == len(messages) - 1 and message.score is not None
        if newest and now is not None:
            text, done = views.reveal(message.content, message.timestamp, now)
            bubble(message, model=model, text=text, streaming=not done)
        else:
            bubble(message, model=model)


def bidding_floor(bids: Iterable[Bid], threshold: float, recency_penalty: float,
                  agents: Sequence[str], key: str) -> None:
    fig = charts.bidding_floor(list(bids), threshold, recency_penalty, agents)
    fig.update_layout(title=None, height=320, margin={"t": 30, "b": 10, "l": 10, "r": 10},
                      legend={"orientation": "h", "y": 1.12, "x": 0})
    st.plotly_chart(fig, key=key, config={"displayModeBar": False})


def metric_cards(cards: Sequence[views.Card], per_row: int = 5) -> None:
    """Metrics in bordered cards; a card's note (e.g. who monologued) sits under its value."""
    for start in range(0, len(cards), per_row):
        cols = st.columns(per_row)
        for col, (label, value, help_text, note) in zip(cols, cards[start:start + per_row],
                                                        strict=False):
            note = escape_markdown(note) if note else None  # markdown; may be an agent name
            col.metric(label, value, delta=note, delta_color="off", delta_arrow="off",
                       help=help_text or None, border=True)


def summary(record: RunRecord) -> None:
    """The end of a run at a glance: stop reason, turns, messages, tokens, cost, time."""
    metric_cards([(label, value, "", note) for label, value, note in views.summary(record)],
                 per_row=3)


def key_warnings(warnings: Sequence[KeyWarning]) -> None:
    for warning in warnings:
        st.warning(escape_markdown(warning.text), icon=":material/key:")


def failure_errors(failed: Mapping[str, str], models: ModelInfo, secrets: Sequence[str],
                   *, fatal: bool) -> None:
    """One actionable message per failing agent: which agent, what went wrong, what to do."""
    show = st.error if fatal else st.warning
    for agent, error in failed.items():
        model, api_base = models.get(agent, ("?", None))
        text = redact(error, secrets)[:400]
        show(f"**{escape_markdown(agent)}** ({escape_markdown(model_label(model))}) failed: "
             f"{escape_markdown(text)}  \n→ {escape_markdown(failure_hint(text, model, api_base))}")
