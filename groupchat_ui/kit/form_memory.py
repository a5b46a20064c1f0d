"""The Run and Sweeps forms' values, remembered per browser across reloads and page switches.

Why: a reload starts a new Streamlit session, and widget values live in that session only; the
Run and Sweeps forms came back at their defaults, and a sweep's agent choice went back to the
first three saved agents without a word, so the estimate was for other agents (issue 21). The
browser's owner id (`?sid=`, state.py) keys a process-wide memory: at the start of each script
run, values missing from the session are put back before any widget is drawn, then the values
the browser just sent are copied in (not at the end: once a page calls st.stop(), or a rerun is
pending, reading session state raises, and the Sweeps page stops until a sweep exists).
Memory only (never disk); the keys named here hold no secrets.

With login on, each owner id belongs to the user whose session made it (`claim`): a link
carries its sender's `?sid=`, and a signed-in user adopting it read and wrote the sender's
drafts (issue 38). Without login everyone is the one local user, and a reload keeps its forms.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Protocol


class State(Protocol):
    """What is used of st.session_state (a dict works too): no streamlit import here."""

    def __contains__(self, key: object, /) -> bool: ...
    def __getitem__(self, key: str, /) -> Any: ...
    def __setitem__(self, key: str, value: Any, /) -> None: ...
    def keys(self) -> Any: ...

# Widget keys of the Run form (run/form.py) and the Sweeps form (sweeps/view.py) that are
# remembered: values only (never a button, whose value Streamlit refuses to set).
RUN_KEYS = ("run_task", "run_roster", "run_preset_choice")
RUN_PREFIX = "run_param_"
SWEEP_KEYS = (
    "sw_room", "sw_saved", "sw_tasks", "sw_search", "sw_samples", "sw_rand_threshold",
    "sw_rand_penalty", "sw_order", "sw_order_samples", "sw_roster", "sw_temperature",
    "sw_threshold", "sw_recency_penalty", "sw_recency_window", "sw_max_loops", "sw_repeats",
    "sw_concurrency", "sw_max_calls", "sw_max_usd", "sw_name", "sw_executor", "sw_ray_address",
    "sw_strategy", "sw_selector_model", "sw_selector_api_base",
)
MAX_BROWSERS = 500  # the oldest browser's forms are forgotten past this many

_memory: OrderedDict[str, dict[str, Any]] = OrderedDict()
_owners: OrderedDict[str, str] = OrderedDict()  # owner id -> the user it belongs to (login on)
_lock = threading.Lock()


def remembered(key: str) -> bool:
    """Whether widget `key` is one of the forms' remembered values."""
    return key in RUN_KEYS or key in SWEEP_KEYS or key.startswith(RUN_PREFIX)


def remember(owner: str, state: State) -> None:
    """Copy the forms' current values of `state` (st.session_state) into `owner`'s memory;
    keys absent from `state` (a page not shown) keep their remembered value."""
    values = {k: _copy(state[k]) for k in list(state.keys())
              if isinstance(k, str) and remembered(k)}
    with _lock:
        mine = _memory.setdefault(owner, {})
        mine.update(values)
        _memory.move_to_end(owner)
        while len(_memory) > MAX_BROWSERS:
            _memory.popitem(last=False)


def restore(owner: str, state: State) -> None:
    """Put `owner`'s remembered values into `state` where it has none (call before widgets)."""
    with _lock:
        mine = dict(_memory.get(owner, {}))
    for key, value in mine.items():
        if key not in state:
            state[key] = _copy(value)


def claim(owner: str, user: str, *, from_link: bool) -> bool:
    """Whether `user` may act as browser `owner` (login on), recording it as theirs when so.

    Owner ids belong to the user whose session made them: one held by another user is never
    taken, nor is one from a link (`from_link`) that no session of this process made (its
    holder unknown: after a restart, or forgotten past MAX_BROWSERS)."""
    with _lock:
        holder = _owners.get(owner)
        if holder is not None and holder != user or holder is None and from_link:
            return False
        _owners[owner] = user
        _owners.move_to_end(owner)
        while len(_owners) > MAX_BROWSERS:
            _owners.popitem(last=False)
        return True


def forget(owner: str) -> None:
    with _lock:
        _memory.pop(owner, None)


def _copy(value: Any) -> Any:
    return list(value) if isinstance(value, list | tuple) else value
