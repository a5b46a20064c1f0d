"""groupchat_core: a turn-based bidding GroupChat engine (a re-creation of the reference GroupChat).

    from groupchat_core import Agent, GroupChat, RESPOND_TOOL

The engine's contract (bidding, the bid prompt, parsing, selection, stopping, outputs, the run
record, events, and the deliberate differences from the reference) is docs/engine.md in the
repository; code comments cite its sections as `docs/engine.md §N`.

The public surface is this package and its documented subpackages `groupchat_core.store`,
`.sweeps`, `.analysis` and `.testing`, each listing its names in `__all__`; `groupchat_core.cli`
is the command line (`python -m groupchat_core`). Modules whose names start with an underscore
are private and move without notice (httpx style); tests/architecture/test_public_api.py keeps
the dashboard and the benchmarks off them.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any

from . import _display
from ._version import app_version, litellm_version

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time each name loads on first use
    from ._agent import DEFAULT_MODEL, TOOL_CHOICE_MODES, Agent
    from ._bidding import (
        BID_PROMPT_PRESETS,
        DEFAULT_BID_PROMPT,
        FORCED_RESPOND_CHOICE,
        RESPOND_TOOL,
        format_decimal,
    )
    from ._bounds import (
        AGENT_BOUNDS,
        CHAT_BOUNDS,
        CHAT_CHOICES,
        PROCESS_BOUNDS,
        SWEEP_BOUNDS,
        Bound,
    )
    from ._chat_settings import CHAT_SETTINGS, ChatSetting
    from ._config import (
        OUTPUT_TYPES,
        STRATEGIES,
        ChatConfig,
        ChatSpec,
        chat_default,
        dump_spec,
        load_spec,
        load_spec_text,
    )
    from ._errors import CliError, ConfigError, GroupChatError, ModelCallError, StoreError
    from ._records import (
        Bid,
        BidDelta,
        BidReceived,
        Event,
        LullReached,
        Message,
        MessagePosted,
        Observer,
        RunFinished,
        RunRecord,
        RunStarted,
        SpeakerSelected,
        Turn,
        TurnCompleted,
        TurnStarted,
        format_cost,
    )
    from ._secrets import hold_secrets, mask_secrets
    from ._statuses import (
        JOB_STATUSES,
        JOB_TERMINAL,
        RUN_ENDED,
        RUN_STATUSES,
        SWEEP_RESUMABLE,
        SWEEP_STATUSES,
        JobStatus,
        RunStatus,
        SweepStatus,
    )
    from ._terminal import terminal_text
    from .engine._groupchat import GroupChat
    from .engine._humans import (
        HAND_SCORE,
        HumanAction,
        LowerHand,
        Pass,
        Pick,
        Post,
        RaiseHand,
        SetBid,
    )
    from .engine._live import LiveRun, LiveState
    from .engine._loop import BackgroundLoop, background_loop
    from .engine._participant import Human, HumanCallback, HumanPrompt
    from .engine._room import Room
    from .engine._room_state import LiveBid, PersonState, RoomSnapshot
    from .engine._selection import select_speaker
    from .engine._warm_up import warm_up
    from .exports._bundles import bundle_json, dump_agents, import_bundle, load_agents_text
    from .exports._tables import bids_csv, transcript_markdown
    from .providers._credentials import check_credentials
    from .providers._endpoints import TRUSTED_BASES_ENV, endpoint_trusted, normalise_base
    from .providers._limiter import max_inflight_calls, set_max_inflight_calls
    from .providers._providers import BidRequest, ModelReply, Provider, reply_from_arguments
    from .providers._ratelimit import set_rate_limit
    from .providers._routing import runs_in_process
    from .providers._sim import SIM_NOTE, is_sim_model
    from .providers._tool_modes import RememberedMode, forget_remembered_modes, remembered_modes

    SIM_MODELS: tuple[str, ...]


def prepare_litellm() -> ModuleType:
    """Import and configure litellm now (seconds; offline price map, sim/ provider); return it."""
    from .providers._litellm import litellm_module

    module: ModuleType = litellm_module()
    return module


# Every public name and the module defining it, loaded on first access (PEP 562). Why lazy:
# `import groupchat_core` built the pydantic models of the agent, the records and the engine
# (a third of a second of CPU), which `groupchat-lab list`/`show` and the dashboard's first
# paint never use. The exports and bundles need the store (SQLAlchemy) as well.
_LAZY = {
    "DEFAULT_MODEL": "._agent",
    "TOOL_CHOICE_MODES": "._agent",
    "Agent": "._agent",
    "DEFAULT_BID_PROMPT": "._bidding",
    "BID_PROMPT_PRESETS": "._bidding",
    "FORCED_RESPOND_CHOICE": "._bidding",
    "RESPOND_TOOL": "._bidding",
    "format_decimal": "._bidding",
    "AGENT_BOUNDS": "._bounds",
    "CHAT_BOUNDS": "._bounds",
    "CHAT_CHOICES": "._bounds",
    "PROCESS_BOUNDS": "._bounds",
    "SWEEP_BOUNDS": "._bounds",
    "Bound": "._bounds",
    "OUTPUT_TYPES": "._config",
    "STRATEGIES": "._config",
    "NAMES_SPEAKERS": "._config",
    "ChatConfig": "._config",
    "ChatSpec": "._config",
    "chat_default": "._config",
    "CHAT_SETTINGS": "._chat_settings",
    "ChatSetting": "._chat_settings",
    "dump_spec": "._config",
    "load_spec": "._config",
    "load_spec_text": "._config",
    "CliError": "._errors",
    "ConfigError": "._errors",
    "GroupChatError": "._errors",
    "ModelCallError": "._errors",
    "StoreError": "._errors",
    "Bid": "._records",
    "BidDelta": "._records",
    "BidReceived": "._records",
    "Event": "._records",
    "LullReached": "._records",
    "Message": "._records",
    "MessagePosted": "._records",
    "Observer": "._records",
    "RunFinished": "._records",
    "RunRecord": "._records",
    "RunStarted": "._records",
    "SpeakerSelected": "._records",
    "Turn": "._records",
    "TurnCompleted": "._records",
    "TurnStarted": "._records",
    "format_cost": "._records",
    "hold_secrets": "._secrets",
    "mask_secrets": "._secrets",
    "terminal_text": "._terminal",
    "JOB_STATUSES": "._statuses",
    "JOB_TERMINAL": "._statuses",
    "RUN_ENDED": "._statuses",
    "RUN_STATUSES": "._statuses",
    "SWEEP_RESUMABLE": "._statuses",
    "SWEEP_STATUSES": "._statuses",
    "JobStatus": "._statuses",
    "RunStatus": "._statuses",
    "SweepStatus": "._statuses",
    "GroupChat": ".engine._groupchat",
    "LiveRun": ".engine._live",
    "LiveState": ".engine._live",
    "warm_up": ".engine._warm_up",
    "BackgroundLoop": ".engine._loop",
    "background_loop": ".engine._loop",
    "select_speaker": ".engine._selection",
    "HAND_SCORE": ".engine._humans",
    "HumanAction": ".engine._humans",
    "LowerHand": ".engine._humans",
    "Pass": ".engine._humans",
    "Pick": ".engine._humans",
    "Post": ".engine._humans",
    "RaiseHand": ".engine._humans",
    "SetBid": ".engine._humans",
    "Human": ".engine._participant",
    "HumanCallback": ".engine._participant",
    "HumanPrompt": ".engine._participant",
    "Room": ".engine._room",
    "LiveBid": ".engine._room_state",
    "PersonState": ".engine._room_state",
    "RoomSnapshot": ".engine._room_state",
    "check_credentials": ".providers._credentials",
    "TRUSTED_BASES_ENV": ".providers._endpoints",
    "endpoint_trusted": ".providers._endpoints",
    "normalise_base": ".providers._endpoints",
    "max_inflight_calls": ".providers._limiter",
    "set_max_inflight_calls": ".providers._limiter",
    "BidRequest": ".providers._providers",
    "ModelReply": ".providers._providers",
    "Provider": ".providers._providers",
    "reply_from_arguments": ".providers._providers",
    "set_rate_limit": ".providers._ratelimit",
    "is_sim_model": ".providers._sim",
    "SIM_NOTE": ".providers._sim",
    "runs_in_process": ".providers._routing",
    "RememberedMode": ".providers._tool_modes",
    "forget_remembered_modes": ".providers._tool_modes",
    "remembered_modes": ".providers._tool_modes",
    "bids_csv": ".exports._tables",
    "transcript_markdown": ".exports._tables",
    "bundle_json": ".exports._bundles",
    "import_bundle": ".exports._bundles",
    "dump_agents": ".exports._bundles",
    "load_agents_text": ".exports._bundles",
}
_SUBPACKAGES = frozenset({"analysis", "cli", "engine", "exports", "integrations", "outcomes",
                          "providers", "store", "sweeps", "testing"})


def _sim_models() -> tuple[str, ...]:
    """Every simulated model name, "sim/balanced" first (the dashboard's model picker)."""
    from .providers._sim import PERSONAS, SIM_PREFIX

    return tuple(SIM_PREFIX + name for name in PERSONAS)


def _record_figures(record: Any) -> dict[str, Any]:
    """RunRecord.figures(): installed here, the one layer that may reach both the records and
    the charts (groupchat_core/_display.py says why)."""
    from .analysis._record_figures import record_figures

    return record_figures(record)


_display.figures_builder = _record_figures


def __getattr__(name: str) -> Any:
    """Resolve a public name on first access (PEP 562), then keep it as a plain global."""
    if name == "SIM_MODELS":
        value: Any = _sim_models()
    elif name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    elif name in _SUBPACKAGES:  # `groupchat_core.engine` without importing it first, as before
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The module's names, lazy ones included."""
    return sorted({*globals(), *_LAZY, "SIM_MODELS"})


__version__ = app_version()

__all__ = [
    # issue 22: people in the room
    "HAND_SCORE",
    "Human",
    "HumanAction",
    "HumanCallback",
    "HumanPrompt",
    "LiveBid",
    "LowerHand",
    "Pass",
    "PersonState",
    "Pick",
    "Post",
    "RaiseHand",
    "Room",
    "RoomSnapshot",
    "SetBid",
    # issue 25: statuses, bounds and defaults declared once (the dashboard reads these)
    "AGENT_BOUNDS",
    "CHAT_BOUNDS",
    "JOB_STATUSES",
    "JOB_TERMINAL",
    "PROCESS_BOUNDS",
    "RUN_ENDED",
    "RUN_STATUSES",
    "SWEEP_BOUNDS",
    "SWEEP_RESUMABLE",
    "SWEEP_STATUSES",
    "Bound",
    "TOOL_CHOICE_MODES",
    "JobStatus",
    "RunStatus",
    "SweepStatus",
    "chat_default",
    "CHAT_SETTINGS",
    "ChatSetting",
    "DEFAULT_BID_PROMPT",
    "BID_PROMPT_PRESETS",
    "CHAT_CHOICES",
    "DEFAULT_MODEL",
    "FORCED_RESPOND_CHOICE",
    "OUTPUT_TYPES",
    "STRATEGIES",
    "NAMES_SPEAKERS",
    "RESPOND_TOOL",
    "SIM_MODELS",
    "SIM_NOTE",
    "TRUSTED_BASES_ENV",
    "Agent",
    "BackgroundLoop",
    "Bid",
    "BidDelta",
    "BidReceived",
    "BidRequest",
    "ChatConfig",
    "ChatSpec",
    "CliError",
    "ConfigError",
    "Event",
    "GroupChat",
    "LiveRun",
    "LiveState",
    "GroupChatError",
    "LullReached",
    "Message",
    "MessagePosted",
    "Observer",
    "ModelCallError",
    "ModelReply",
    "Provider",
    "RememberedMode",
    "RunFinished",
    "RunRecord",
    "RunStarted",
    "SpeakerSelected",
    "StoreError",
    "Turn",
    "TurnCompleted",
    "TurnStarted",
    "app_version",
    "background_loop",
    "bids_csv",
    "bundle_json",
    "check_credentials",
    "dump_agents",
    "dump_spec",
    "endpoint_trusted",
    "forget_remembered_modes",
    "format_cost",
    "format_decimal",
    "hold_secrets",
    "import_bundle",
    "is_sim_model",
    "litellm_version",
    "load_agents_text",
    "load_spec",
    "load_spec_text",
    "mask_secrets",
    "runs_in_process",
    "max_inflight_calls",
    "normalise_base",
    "prepare_litellm",
    "reply_from_arguments",
    "remembered_modes",
    "select_speaker",
    "set_max_inflight_calls",
    "set_rate_limit",
    "terminal_text",
    "transcript_markdown",
    "warm_up",
]
