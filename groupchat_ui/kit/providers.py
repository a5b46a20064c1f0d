"""Which provider key a model needs, session-only keys on agent copies, and failure hints.

Why (no streamlit, no litellm import: both checks run on every render of the Run page):
- pre-flight: warn before a run that an agent's provider has no key in this session or the
  server environment, instead of a chat that silently lulls on failed bids;
- keys: a key typed in Settings lives in one browser session; it reaches the engine only on
  per-job copies of the agents (`Agent.api_key`, which no dump, spec or store row includes),
  never `os.environ`, which every other session would share. A provider's key goes only to an
  agent whose endpoint is trusted (the provider's own, or GROUPCHAT_TRUSTED_API_BASES); an
  agent at any other api_base gets only a key typed for that very base (`endpoint_key_name`),
  since anyone may point a shared saved agent at a server they control;
- failures: a failed bid's error text becomes a message naming the agent and the fix.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlparse

from pydantic import SecretStr

from groupchat_core import (
    Agent,
    endpoint_trusted,
    is_sim_model,
    normalise_base,
    runs_in_process,
)

# Environment variables litellm reads, with a label for the Settings page.
PROVIDER_KEYS: dict[str, str] = {
    "OPENAI_API_KEY": "OpenAI",
    "ANTHROPIC_API_KEY": "Anthropic",
    "GEMINI_API_KEY": "Google Gemini",
    "MISTRAL_API_KEY": "Mistral",
    "GROQ_API_KEY": "Groq",
    "OPENROUTER_API_KEY": "OpenRouter",
    "DEEPSEEK_API_KEY": "DeepSeek",
    "XAI_API_KEY": "xAI",
    "TOGETHERAI_API_KEY": "Together AI",
    "COHERE_API_KEY": "Cohere",
}
_PREFIX_ENV = {
    "openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY",
    "mistral": "MISTRAL_API_KEY", "groq": "GROQ_API_KEY", "openrouter": "OPENROUTER_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY", "xai": "XAI_API_KEY", "together_ai": "TOGETHERAI_API_KEY",
    "cohere": "COHERE_API_KEY", "cohere_chat": "COHERE_API_KEY",
}
_LOCAL_PREFIXES = frozenset({"ollama", "ollama_chat", "hosted_vllm", "lm_studio", "llamafile",
                             "vllm"})
_BARE_MODELS = ((r"^(gpt-|o\d|chatgpt-)", "OPENAI_API_KEY"), (r"^claude", "ANTHROPIC_API_KEY"),
                (r"^(mistral-|open-mistral)", "MISTRAL_API_KEY"), (r"^command", "COHERE_API_KEY"))
MODEL_HINT = ("any litellm model string: gpt-4o-mini, anthropic/claude-3-5-haiku-latest, "
              "ollama/llama3.2, or openai/<name> with an api_base for an OpenAI-compatible "
              "server (vLLM, llama.cpp, LM Studio)")


def model_label(model: str) -> str:
    """How a model is shown everywhere: simulations say so."""
    return f"{model} (simulated)" if is_sim_model(model) else model


@dataclass(frozen=True)
class KeyNeed:
    """The key a model needs: `env` names it; None with `known` means no key is needed."""

    env: str | None
    known: bool


def key_need(model: str, api_base: str | None = None) -> KeyNeed:
    """Which environment variable holds the key for this model (a best guess, no litellm)."""
    if runs_in_process(model):  # a sim or a shared fake: no network, no key
        return KeyNeed(None, True)
    prefix, sep, _ = model.partition("/")
    if sep and prefix in _LOCAL_PREFIXES:
        return KeyNeed(None, True)
    if sep and prefix in _PREFIX_ENV:  # openai/ + a local api_base needs one too (any value)
        return KeyNeed(_PREFIX_ENV[prefix], True)
    for pattern, env in _BARE_MODELS:
        if re.match(pattern, model):
            return KeyNeed(env, True)
    return KeyNeed(None, False)


def is_local(api_base: str | None) -> bool:
    host = urlparse(api_base or "").hostname or ""
    return host in ("localhost", "127.0.0.1", "::1") or host.endswith(".local")


@dataclass(frozen=True)
class KeyWarning:
    agent: str
    model: str
    env: str | None
    api_base: str | None = None

    @property
    def text(self) -> str:
        if self.env is None:
            return (f"{self.agent} uses {self.model!r}: cannot tell which provider key it needs. "
                    f"Check the model string ({MODEL_HINT}); without a key its bids will fail.")
        local = (" A local server that does not check keys accepts any value, e.g. 'none'."
                 if is_local(self.api_base) else "")
        return (f"{self.agent} uses {self.model!r}, and no {self.env} is set in Settings or the "
                "server environment: its bids will fail. Add the key in Settings (this browser "
                "session only) or start the server with it in the environment." + local)


def missing_keys(agents: Sequence[Agent], session_keys: Mapping[str, str],
                 environ: Mapping[str, str]) -> list[KeyWarning]:
    """Agents whose provider key is known neither to this session nor to the environment."""
    warnings = []
    for agent in agents:
        if agent.api_key is not None:
            continue
        need = key_need(agent.model_name, agent.api_base)
        if need.env is None and need.known:
            continue
        if need.env is not None and (session_keys.get(need.env) or environ.get(need.env)):
            continue
        warnings.append(KeyWarning(agent.agent_name, agent.model_name, need.env, agent.api_base))
    return warnings


def endpoint_key_name(api_base: str) -> str | None:
    """The session-key name of a key typed for one API base (its normal form), or None when
    the URL cannot be an endpoint (not http(s), user info, a query)."""
    return normalise_base(api_base)


def session_key_for(agent: Agent, session_keys: Mapping[str, str]) -> str | None:
    """The session key an agent's job may carry: one typed for its exact api_base, else its
    provider's key when the endpoint is trusted, else none (the engine then sends no key)."""
    base = agent.api_base
    if base:
        own = session_keys.get(endpoint_key_name(base) or "")
        if own:
            return own
    if not endpoint_trusted(agent.model_name, base):
        return None
    return session_keys.get(key_need(agent.model_name, base).env or "") or None


def with_session_keys(agents: Iterable[Agent], session_keys: Mapping[str, str]) -> list[Agent]:
    """Deep copies for one job, each carrying the session key meant for its endpoint (if any)
    as api_key; an agent that carries its own key keeps it."""
    copies = []
    for agent in agents:
        copy = agent.model_copy(deep=True)
        key = None if agent.api_key is not None else session_key_for(agent, session_keys)
        if key:
            copy.api_key = SecretStr(key)
        copies.append(copy)
    return copies


LIMITS_HELP = (
    "Agent timeout: the most one model request may take, from sending it to the last byte of "
    "the reply; a server that trickles its answer is cut off here. Bid timeout: the most one "
    "agent's whole bid may take each turn, including waiting for a free call slot, retries with "
    "their backoff (and a server's Retry-After, at most 30 s), and tool-choice fallbacks. Left "
    "empty, a bid still ends after at most (retries + 4) × agent timeout + 8 s per retry. From "
    "OpenAI-compatible servers (with an API base), replies over 2 MB are refused and error "
    "bodies are read up to 16 KB. Stored errors are cut at 2,000 characters and messages at "
    "20,000.")

_CONNECTION = r"APIConnectionError|Connection ?(refused|error)|ConnectError|getaddrinfo"
_HINTS: tuple[tuple[str, str], ...] = (
    (r"UntrustedEndpoint|untrusted api_base", "This agent's api_base is not trusted on this "
     "server, so no server or Settings provider key is sent there. Type a key for that exact "
     "API base in Settings (this browser session only), or ask an admin to list it in "
     "GROUPCHAT_TRUSTED_API_BASES."),
    (r"GROUPCHAT_BLOCK_REMOTE_CALLS|remote calls are blocked", "Real model calls are blocked in "
     "this process (GROUPCHAT_BLOCK_REMOTE_CALLS is set): nothing was sent. Use a sim/ model or "
     "a local api_base, or start the server without that variable."),
    (r"^unreadable: ", "The model answered, but not with a readable bid (a respond call with a "
     "number and a message): raise the agent's max tokens or context window if replies are cut "
     "off, set Tool choice mode to json for a server without tool calls, or use a model that "
     "follows tool calls better."),
    (r"AuthenticationError|api[ _-]?key|\b401\b|unauthori[sz]ed|credentials", "{key_fix}"),
    (r"NotFoundError|LLM Provider NOT provided|model[ _]not[ _]found|does not exist|"
     r"Unknown model|\b404\b", "Check the model string {model!r}: " + MODEL_HINT + "."),
    (r"tool|function", "This model or server does not support tool calls: edit the agent and "
     "set Tool choice mode to json (a plain-text JSON reply)."),
    (_CONNECTION, "{connection_fix}"),
    (r"RateLimit|\b429\b", "The provider is rate limiting: lower the in-flight call limit in "
     "Settings, or wait and run again."),
    (r"Timeout|timed out", "The call timed out: raise the agent's timeout or the chat's bid "
     "timeout."),
)


def failure_hint(error: str, model: str, api_base: str | None = None) -> str:
    """What to do about a failed bid, from its error text (missing key, unknown model, tools)."""
    need = key_need(model)  # a server that asks for a key wants the provider's, local or not
    key_fix = (f"Add {need.env} in Settings (this browser session) or the server environment."
               if need.env else "Set the provider's API key in Settings or the environment.")
    if is_local(api_base):
        key_fix += " A local server that does not check keys accepts any value, e.g. 'none'."
    if api_base:  # our own server: is it up, is the URL right?
        connection_fix = (f"Could not reach the server at {api_base}: check that the server "
                          "runs and the agent's api_base URL.")
    else:  # a hosted provider: the network, or a model string naming the wrong provider
        connection_fix = (f"Could not reach the provider of {model!r}: check this machine's "
                          "network or proxy, that the model string names the provider you mean "
                          f"({MODEL_HINT}), and that its key belongs to that provider.")
    for pattern, hint in _HINTS:
        if re.search(pattern, error, flags=re.IGNORECASE):
            return hint.format(key_fix=key_fix, model=model, connection_fix=connection_fix)
    return f"Check the agent's model string {model!r} and its provider key."
