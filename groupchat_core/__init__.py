"""groupchat_core: a turn-based bidding GroupChat engine, exact to SPEC.md.

    from groupchat_core import Agent, GroupChat, RESPOND_TOOL
"""

from ._agent import DEFAULT_MODEL, Agent
from ._bidding import DEFAULT_BID_PROMPT, RESPOND_TOOL
from ._config import ChatConfig, ChatSpec, dump_spec, load_spec, load_spec_text
from ._credentials import check_credentials
from ._errors import ConfigError, GroupChatError, ModelCallError, StoreError
from ._groupchat import GroupChat
from ._limiter import set_max_inflight_calls
from ._outputs import OUTPUT_TYPES
from ._ratelimit import set_rate_limit
from ._records import Bid, Event, Message, RunRecord, Turn
from ._selection import select_speaker

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
    "check_credentials",
    "dump_spec",
    "load_spec",
    "load_spec_text",
    "select_speaker",
    "set_max_inflight_calls",
    "set_rate_limit",
]
