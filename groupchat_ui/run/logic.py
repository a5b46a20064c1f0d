"""The Run page without streamlit: chat parameters, starting a recorded run as a job, presets
made the next run, and the tables and labels the live view shows.

Why: the page stays thin (read state, take input, call one function here, render), and every
write it makes and every number it shows can be tested without a browser or a script run.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import pandas as pd

from groupchat_core import (
    CHAT_SETTINGS,
    Agent,
    Bid,
    ConfigError,
    GroupChat,
    RunRecord,
    Turn,
    chat_default,
    check_credentials,
    format_cost,
    is_sim_model,
    prepare_litellm,
    runs_in_process,
)
from groupchat_core.store import RunStore
from groupchat_ui.kit.access import Actor, may_edit_agent
from groupchat_ui.kit.jobs import LOCAL_USER, JobRegistry
from groupchat_ui.kit.labels import changed_agents, unused_name
from groupchat_ui.kit.presets import Preset
from groupchat_ui.kit.providers import LIMITS_HELP, missing_keys, with_session_keys

from .form import RunForm

WORDS_PER_SECOND = 14.0
NO_READABLE_BID = "no agent produced a readable bid"
KEY_FIX = ("Add the key in Settings (this browser session only), start the server with it in "
           "the environment, or give the agent an API key.")

# The form's help per setting, from the one settings schema (groupchat_core.CHAT_SETTINGS);
# bid_timeout's adds what the dashboard says about every time limit.
PARAM_HELP = {name: s.form_help(LIMITS_HELP if name == "bid_timeout" else "")
              for name, s in CHAT_SETTINGS.items() if s.form is not None}


def floor_settings(config: Mapping[str, Any]) -> tuple[float, float]:
    """(threshold, recency_penalty) of a run's config; a missing key is the engine's default."""
    return (float(config.get("threshold", chat_default("threshold"))),
            float(config.get("recency_penalty", chat_default("recency_penalty"))))


# --- starting a run -----------------------------------------------------------------------


def preset_conflicts(store: RunStore, preset: Preset) -> list[str]:
    """Saved agents the preset would replace that differ from the preset's own (edited)."""
    return changed_agents(store.saved_agents()[0], preset.build_agents())


def load_preset(store: RunStore, preset: Preset, keep: Iterable[str] = (),
                actor: Actor | None = None) -> list[str]:
    """Save the preset's agents and the room as a store preset; the saved agents named in
    `keep`, and those `actor` may not edit (someone else's, kit/access.py) where they differ
    from the preset's, are left alone and the preset's versions saved as copies
    ("name (preset)"). Returns the agents' names as saved, in the preset's order."""
    actor = actor or Actor(LOCAL_USER, LOCAL_USER)
    saved = {a.agent_name: a.to_spec() for a in store.saved_agents()[0]}
    keep, taken = set(keep), [name for name, _, _ in store.agents_version()]
    keep |= {name for name, (owner, _) in store.agent_owners().items()
             if not may_edit_agent(owner, actor.user, signed_in=actor.signed_in)}
    agents = []
    for agent in preset.build_agents():
        if agent.agent_name in keep and saved.get(agent.agent_name) != agent.to_spec():
            name = unused_name(agent.agent_name, "preset", taken)
            agent = agent.model_copy(update={"agent_name": name})
            taken.append(agent.agent_name)
        agents.append(agent)
    store.save_agents(agents, owner=actor.user, owner_name=actor.user_name)
    store.save_preset(preset.name, preset.spec())
    return [a.agent_name for a in agents]


def chat_params(values: Mapping[str, Any] | RunForm) -> dict[str, Any]:
    """GroupChat keyword arguments from the parameter form (see RunForm.chat_kwargs)."""
    return as_form(values).chat_kwargs()


def as_form(values: Mapping[str, Any] | RunForm) -> RunForm:
    """The run form as its typed model (a mapping of parameters by name is read into one)."""
    return values if isinstance(values, RunForm) else RunForm.from_values(values)


def default_params() -> dict[str, Any]:
    """The engine's defaults, except two: no name (a run is labelled by its task unless its user
    names it), and the bid cache off: a dashboard run asks every agent afresh (a cached sim
    replays instantly, skipping the simulated latency the live view shows; README says so)."""
    engine = {name: s.default for name, s in CHAT_SETTINGS.items() if s.form and s.engine}
    return {**engine, "name": "", "bid_cache": False}


def preflight(agents: Sequence[Agent], session_keys: Mapping[str, str],
              environ: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """(problems, warnings) before Start: `problems` are the engine's missing-credential checks
    (GroupChat.run refuses such a room: Start is disabled), over the agents as a job would get
    them (with this session's keys); `warnings` name models whose provider cannot be told."""
    problems = check_credentials(with_session_keys(agents, session_keys))
    unknown = [w.text for w in missing_keys(agents, session_keys, environ) if w.env is None]
    return problems, unknown


def build_chat(agents: Sequence[Agent], params: Mapping[str, Any] | RunForm,
               session_keys: Mapping[str, str]) -> GroupChat:
    """A chat over per-job agent copies that carry this session's keys (ConfigError if bad)."""
    return GroupChat(agents=with_session_keys(agents, session_keys), **chat_params(params))


_warm = threading.Lock()
_warming: list[threading.Thread] = []


def warm_up_litellm(agents: Iterable[Agent]) -> bool:
    """Import litellm on a side thread once a room has a non-sim agent; True if started.

    Its import takes seconds; done lazily inside a run, it would happen on the engine's shared
    loop thread and stall every other session's live chat meanwhile.
    """
    if all(is_sim_model(a.model_name) for a in agents):
        return False
    with _warm:
        if _warming:
            return False
        thread = threading.Thread(target=prepare_litellm, name="litellm-import", daemon=True)
        _warming.append(thread)
    thread.start()
    return True


def start_run(store: RunStore, registry: JobRegistry, owner: str, agents: Sequence[Agent],
              task: str, params: Mapping[str, Any] | RunForm, session_keys: Mapping[str, str], *,
              user: str = LOCAL_USER, user_name: str | None = None, stream: bool = True,
              trace: bool = False) -> str:
    """Start a recorded chat as a background job of this session; returns the job id. The
    run is recorded as `user`'s (who alone may stop or delete it).

    `stream` (the Settings page's "Stream bids live", on by default) streams every bid so the
    live view shows the candidates forming (the job's `LiveRun` folds them); `trace` (the
    Settings page's "Trace runs") exports the run's OpenTelemetry spans as `run --trace`
    does (kit/traces.py)."""
    if len(agents) < 2:
        raise ConfigError("pick at least two agents for a chat")
    if not task.strip():
        raise ConfigError("the task must not be empty: it is the first message of the chat")
    chat = build_chat(agents, as_form(params).model_copy(update={"stream": stream}),
                      session_keys)
    if trace:
        from groupchat_ui.kit.traces import trace_run

        trace_run(chat, user)
    # no key needs masking here: the engine has masked every text of every event
    recorder = store.recorder(chat, owner=user, owner_name=user_name or user)
    return registry.start_chat(chat, task, owner=owner, extra_observers=[recorder], user=user,
                               user_name=user_name)


# --- candidates forming (streamed bids) ----------------------------------------------------

def streams(config: Mapping[str, Any], models: Mapping[str, tuple[str, str | None]]) -> bool:
    """Whether a run's candidates can be watched forming: stream_bids on and some agent on a
    real model (sims answer in-process and do not stream; their winners replay word by word)."""
    return bool(config.get("stream_bids")) and any(
        not runs_in_process(model) for model, _ in models.values())


def may_stream(config: Mapping[str, Any], models: Mapping[str, tuple[str, str | None]]) -> bool:
    """`streams`, also before the run's config arrives with its first event (a page drawn at
    Start sees none yet): then any agent on a real model may stream (the default is on)."""
    return streams(config or {"stream_bids": True}, models)


def stream_note(models: Sequence[str], stream: bool) -> str | None:
    """What streams in a run of these models (None: nothing to say): sims never stream."""
    if not stream or not models:
        return None
    sims = sum(runs_in_process(m) for m in models)
    if sims == 0:
        return "Streaming on: every candidate's reply forms live while the turn is open."
    if sims == len(models):
        return ("Streaming is on, but simulated agents (sim/) never stream: their bids arrive "
                "whole and the winner's message is replayed word by word.")
    return (f"Streaming on for the {len(models) - sims} agent(s) on real models; the {sims} "
            "simulated (sim/) agent(s) never stream: their bids arrive whole.")


def candidate_rows(agents: Sequence[str], forming: Mapping[str, tuple[float | None, str, bool]],
                   ) -> list[tuple[str, str, str, bool]]:
    """(agent, status line, message so far, still typing) per agent in roster order."""
    rows = []
    for agent in agents:
        score, text, done = forming.get(agent, (None, "", False))
        if agent not in forming:
            status = "waiting for the first token…"
        else:
            shown = "score …" if score is None else f"score {score:.2f}"
            status = f"{shown} · {'bid in' if done else 'typing…'}"
        rows.append((agent, status, text, agent in forming and not done))
    return rows


def losing_bids(bids: Iterable[Bid]) -> list[Bid]:
    """A settled turn's candidates that were not posted (folded away under the transcript)."""
    return [b for b in bids if not b.winner and b.message]


# --- what the live view shows -------------------------------------------------------------


def parse_time(value: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(value) if value else None
    except ValueError:
        return None


def duration_s(started: str | None, ended: str | None) -> float | None:
    start, end = parse_time(started), parse_time(ended)
    return (end - start).total_seconds() if start and end else None


def reveal(content: str, posted_at: str | None, now: datetime) -> tuple[str, bool]:
    """The words of a new reply shown so far (streamed at WORDS_PER_SECOND) and whether all are."""
    words = content.split(" ")
    posted = parse_time(posted_at)
    if posted is None:
        return content, True
    shown = int((now - posted).total_seconds() * WORDS_PER_SECOND) + 1
    if shown >= len(words):
        return content, True
    return " ".join(words[:max(shown, 1)]), False


def _cell(bid: Bid | None) -> str:
    if bid is None:
        return ""
    if bid.failed:
        return "failed"
    if not bid.message:
        return f"{bid.score:.2f} silent"
    mark = f" → {bid.adjusted:.2f}" if bid.penalized else ""
    return f"{bid.score:.2f}{mark}" + (" ★" if bid.winner else "")


def past_turns(turns: Sequence[Turn], bids_by_turn: Mapping[int, Sequence[Bid]],
               agents: Sequence[str]) -> pd.DataFrame:
    """One row per finished turn, newest first: winner (or lull), margin, every agent's bid."""
    rows = []
    for turn in reversed(turns):
        by_agent = {b.agent: b for b in bids_by_turn.get(turn.turn, ())}
        outcome = turn.winner or ("lull" if turn.lull else NO_READABLE_BID)
        row: dict[str, Any] = {"turn": turn.turn, "spoke": outcome,
                               "margin": None if turn.margin is None else round(turn.margin, 3)}
        row.update({agent: _cell(by_agent.get(agent)) for agent in agents})
        rows.append(row)
    return pd.DataFrame(rows, columns=["turn", "spoke", "margin", *agents])


def failures(bids: Iterable[Bid]) -> dict[str, str]:
    """The first failed call (or unparseable reply) per agent, in the order they happened."""
    found: dict[str, str] = {}
    for bid in bids:
        if bid.error and bid.agent not in found:
            found[bid.agent] = bid.error
    return found


def unreadable_turn(turns: Sequence[Turn],
                    bids_by_turn: Mapping[int, Sequence[Bid]]) -> tuple[int, dict[str, str]] | None:
    """The turn no bid could be read on (the run stopped there with an error) and each agent's
    reason from its bid; None when every turn had a winner or a lull."""
    for turn in turns:
        if turn.winner is None and not turn.lull:
            return turn.turn, {b.agent: b.error or "no readable bid"
                               for b in bids_by_turn.get(turn.turn, ())}
    return None


def summary(record: RunRecord) -> list[tuple[str, str, str | None]]:
    """Stop reason, turns, tokens, cost and time of a finished run: (label, value, note)."""
    seconds = duration_s(record.started_at, record.ended_at)
    tokens = record.total_prompt_tokens + record.total_completion_tokens
    return [
        ("Stop reason", record.stop_reason or "running", None),
        ("Turns", str(len(record.turns)), None),
        ("Messages", str(max(len(record.messages) - 1, 0)), "posted after the task"),
        ("Tokens", f"{tokens:,}", "simulated agents use none" if _all_sim(record) else None),
        ("Cost", format_cost(record.total_cost_usd, record.unpriced_bids),
         f"{record.total_calls} model calls"),
        ("Time", "n/a" if seconds is None else f"{seconds:.1f} s", None),
    ]


def _all_sim(record: RunRecord) -> bool:
    return bool(record.bids) and all(b.path == "simulation" for b in record.bids)
