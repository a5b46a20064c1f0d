"""Fakes shipped with the package, for tests and demos (as openai-agents and pydantic-ai do).

    from groupchat_core.testing import ScriptedBids, FakeOpenAIServer, tool_call

`ScriptedBids` answers bids in-process from a script per agent and turn, records every call, and
fails loudly on a call it did not expect; `assert_complete()` checks every scripted bid was used.
It is a Provider: pass it in, `GroupChat(..., providers=script.providers)`.
`FakeOpenAIServer` is a real OpenAI-compatible HTTP server on 127.0.0.1 for the litellm path,
with scripted tool calls, latency and provider errors (reply builders: tool_call, text, error).
`HostileServer` is a hostile one (huge bodies, trickles, floods, echoed keys, cut streams).
`LocalLLMServer` runs a real small LLM (SmolLM2-135M via llama.cpp) behind the same API, offline:
`python -m groupchat_core.testing.local_llm install` builds it once per machine.
"""

from ._fake_replies import ModelConfig, RecordedRequest, Reply, error, text, tool_call
from ._fake_server import FakeOpenAIServer
from ._hostile import HostileServer
from ._local_llm import LocalLLMServer, llm_home
from ._scripted import ScriptedBid, ScriptedBids, UnexpectedModelCall

__all__ = [
    "FakeOpenAIServer",
    "HostileServer",
    "LocalLLMServer",
    "ModelConfig",
    "RecordedRequest",
    "Reply",
    "ScriptedBid",
    "ScriptedBids",
    "UnexpectedModelCall",
    "error",
    "llm_home",
    "text",
    "tool_call",
]
