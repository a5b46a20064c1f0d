"""Fakes shipped with the package, for tests and demos (as openai-agents and pydantic-ai do).

    from groupchat_core.testing import ScriptedBids, FakeOpenAIServer, tool_call

`ScriptedBids` answers bids in-process from a script per agent and turn, records every call, and
fails loudly on a call it did not expect; `assert_complete()` checks every scripted bid was used.
`FakeOpenAIServer` is a real OpenAI-compatible HTTP server on 127.0.0.1 for the litellm path,
with scripted tool calls, latency and provider errors (reply builders: tool_call, text, error).
"""

from ._fake_replies import ModelConfig, RecordedRequest, Reply, error, text, tool_call
from ._fake_server import FakeOpenAIServer
from ._scripted import ScriptedBid, ScriptedBids, UnexpectedModelCall

__all__ = [
    "FakeOpenAIServer",
    "ModelConfig",
    "RecordedRequest",
    "Reply",
    "ScriptedBid",
    "ScriptedBids",
    "UnexpectedModelCall",
    "error",
    "text",
    "tool_call",
]
