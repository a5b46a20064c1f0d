"""groupchat_core: a turn-based bidding GroupChat engine, exact to SPEC.md.

    from groupchat_core import Agent, GroupChat, RESPOND_TOOL
"""

from .agent import DEFAULT_MODEL, Agent
from .bidding import DEFAULT_BID_PROMPT, RESPOND_TOOL, select_speaker
from .config import ChatConfig, ChatSpec, dump_spec, load_spec, load_spec_text
from .engine import GroupChat
from .errors import ConfigError, GroupChatError, ModelCallError, StoreError
from .limiter import set_max_inflight_calls
from .outputs import OUTPUT_TYPES
from .records import Bid, Event, Message, RunRecord, Turn

__all__ = [
    "DEFAULT_BID_PROMPT",
    "DEFAULT_MODEL",
    "OUTPUT_TYPES",
    "RESPOND_TOOL",
    "Agent",
    "Bid",
    "ChatConfig",
    "ChatSpec",
    "ConfigError",
    "Event",
    "GroupChat",
    "GroupChatError",
    "Message",
    "ModelCallError",
    "RunRecord",
    "StoreError",
    "Turn",
    "dump_spec",
    "load_spec",
    "load_spec_text",
    "select_speaker",
    "set_max_inflight_calls",
]
