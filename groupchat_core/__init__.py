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

from ._agent import DEFAULT_MODEL, Agent
from ._bidding import (
    DEFAULT_BID_PROMPT,
    FORCED_RESPOND_CHOICE,
    RESPOND_TOOL,
    format_decimal,
)
from ._bounds import AGENT_BOUNDS, CHAT_BOUNDS, PROCESS_BOUNDS, SWEEP_BOUNDS, Bound
from ._config import (
    OUTPUT_TYPES,
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
from ._version import app_version, litellm_version
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
from .engine._loop import BackgroundLoop, background_loop
from .engine._participant import Human, HumanCallback, HumanPrompt
from .engine._room import Room
from .engine._room_state import LiveBid, PersonState, RoomSnapshot
from .engine._selection import select_speaker
from .providers._credentials import check_credentials
from .providers._endpoints import TRUSTED_BASES_ENV, endpoint_trusted, normalise_base
from .providers._limiter import max_inflight_calls, set_max_inflight_calls
from .providers._litellm import litellm_module as _litellm_module
from .providers._providers import BidRequest, ModelReply, Provider, reply_from_arguments
from .providers._ratelimit import set_rate_limit
from .providers._sim import PERSONAS as _PERSONAS
from .providers._sim import SIM_PREFIX as _SIM_PREFIX
from .providers._sim import is_sim_model
from .providers._tool_modes import RememberedMode, forget_remembered_modes, remembered_modes

if TYPE_CHECKING:
    from .exports._bundles import bundle_json, dump_agents, import_bundle, load_agents_text
    from .exports._tables import bids_csv, transcript_markdown

# Every simulated model name, "sim/balanced" first (the dashboard's model picker offers these).
SIM_MODELS: tuple[str, ...] = tuple(_SIM_PREFIX + name for name in _PERSONAS)


def prepare_litellm() -> ModuleType:
    """Import and configure litellm now (seconds; offline price map, sim/ provider); return it."""
    module: ModuleType = _litellm_module()
    return module


# Exports and bundles need the store (SQLAlchemy); they load on first use so that
# `import groupchat_core` stays fast (the cold-start benchmark counts it).
_LAZY = {
    "bids_csv": ".exports._tables",
    "transcript_markdown": ".exports._tables",
    "bundle_json": ".exports._bundles",
    "import_bundle": ".exports._bundles",
    "dump_agents": ".exports._bundles",
    "load_agents_text": ".exports._bundles",
}


def __getattr__(name: str) -> Any:
    """Resolve a lazily loaded export on first access (PEP 562)."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The module's names, lazy exports included."""
    return sorted({*globals(), *_LAZY})


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
    "JobStatus",
    "RunStatus",
    "SweepStatus",
    "chat_default",
    "DEFAULT_BID_PROMPT",
    "DEFAULT_MODEL",
    "FORCED_RESPOND_CHOICE",
    "OUTPUT_TYPES",
    "RESPOND_TOOL",
    "SIM_MODELS",
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
    "max_inflight_calls",
    "normalise_base",
    "prepare_litellm",
    "reply_from_arguments",
    "remembered_modes",
    "select_speaker",
    "set_max_inflight_calls",
    "set_rate_limit",
    "transcript_markdown",
]
