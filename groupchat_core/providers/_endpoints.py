"""Keys bound to endpoints: which api_base may receive a key the agent did not bring itself.

Why: saved agents are shared, and anyone may point one at a server they control. A key from the
server's environment (or another user's session) must go only where it belongs: the provider's
own endpoint (no api_base, or the provider's official base URL) or an endpoint an administrator
trusts, listed in GROUPCHAT_TRUSTED_API_BASES (a comma list of base URLs). Every other api_base
gets a placeholder key, so litellm cannot fall back to the environment's key on its own; an
agent's own `api_key` (set by whoever runs it) is sent as given.

The destination judged is the agent's first-class `api_base` (or a deployment's): an agent's
`litellm_kwargs` can name no endpoint, provider or credential (_kwargs_policy.py), so no setting
can move a request past this judgement.

URLs are compared in one normal form, exactly (scheme, host, port, path; no prefix or substring
matching): `https://api.openai.com.evil.com`, `https://api.openai.com@evil`, another port or
plain http are other endpoints. A URL with user info, a query or a fragment is never trusted.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from urllib.parse import urlsplit

from .._errors import ModelCallError

TRUSTED_BASES_ENV = "GROUPCHAT_TRUSTED_API_BASES"
PLACEHOLDER_KEY = "no-key"  # what an untrusted endpoint gets: no secret, and no env fallback
_DEFAULT_PORTS = {"http": 80, "https": 443}

# The providers' own endpoints (as litellm calls them), with and without their version path.
OFFICIAL_BASES: dict[str, tuple[str, ...]] = {
    "openai": ("https://api.openai.com", "https://api.openai.com/v1"),
    "anthropic": ("https://api.anthropic.com", "https://api.anthropic.com/v1"),
    "gemini": ("https://generativelanguage.googleapis.com",
               "https://generativelanguage.googleapis.com/v1beta"),
    "mistral": ("https://api.mistral.ai", "https://api.mistral.ai/v1"),
    "groq": ("https://api.groq.com/openai/v1",),
    "openrouter": ("https://openrouter.ai/api/v1",),
    "deepseek": ("https://api.deepseek.com", "https://api.deepseek.com/v1",
                 "https://api.deepseek.com/beta"),
    "xai": ("https://api.x.ai", "https://api.x.ai/v1"),
    "together_ai": ("https://api.together.xyz", "https://api.together.xyz/v1"),
    "cohere": ("https://api.cohere.ai", "https://api.cohere.com"),
    "cohere_chat": ("https://api.cohere.ai", "https://api.cohere.com"),
}
# Providers whose requests are signed with credentials litellm finds by itself (AWS SigV4 from
# the environment or ~/.aws, Google's application credentials), whatever key the engine passes:
# at an untrusted api_base such an agent is refused, since no placeholder can stop it. (Azure
# sends the api-key it is given before any AD token, so the placeholder holds there: tested.)
SIGNING_PROVIDERS = frozenset({"bedrock", "bedrock_converse", "sagemaker", "sagemaker_chat",
                               "vertex_ai", "vertex_ai_beta"})
_BARE_PROVIDERS = ((r"^(gpt-|o\d|chatgpt-|text-)", "openai"), (r"^claude", "anthropic"),
                   (r"^(mistral-|open-mistral)", "mistral"), (r"^command", "cohere"))


def normalise_base(url: str | None) -> str | None:
    """`scheme://host:port/path` (lower-case scheme and host, explicit port, no trailing
    slash), or None for what cannot be an endpoint to trust: not http(s), no host, user info,
    a query or a fragment."""
    text = (url or "").strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:  # a port out of range or not a number
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname or "@" in parts.netloc:
        return None
    if parts.query or parts.fragment or text.endswith(("?", "#")):
        return None
    host = parts.hostname.lower().rstrip(".")
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    path = re.sub(r"/{2,}", "/", parts.path).rstrip("/")
    return f"{scheme}://{host}:{port or _DEFAULT_PORTS[scheme]}{path}"


def trusted_bases(environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The administrator's trusted bases (GROUPCHAT_TRUSTED_API_BASES), normalised; entries
    that cannot be trusted (see normalise_base) are ignored. Read on every call: tests and
    long-running servers may change the environment."""
    env = os.environ if environ is None else environ
    found = (normalise_base(item) for item in env.get(TRUSTED_BASES_ENV, "").split(","))
    return frozenset(base for base in found if base)


def provider_of(model: str) -> str | None:
    """The provider a model string names: its prefix, or a best guess for a bare name."""
    prefix, sep, _ = model.partition("/")
    if sep:
        return prefix.lower()
    for pattern, provider in _BARE_PROVIDERS:
        if re.match(pattern, model):
            return provider
    return None


def endpoint_trusted(model: str, api_base: str | None,
                     environ: Mapping[str, str] | None = None) -> bool:
    """Whether a key not brought by the agent may go to this endpoint: the provider's default
    (no api_base) or official base, or one listed in GROUPCHAT_TRUSTED_API_BASES."""
    if not (api_base or "").strip():
        return True
    base = normalise_base(api_base)
    if base is None:
        return False
    official = {normalise_base(b) for b in OFFICIAL_BASES.get(provider_of(model) or "", ())}
    return base in official or base in trusted_bases(environ)


def request_base(kwargs: Mapping[str, object]) -> str | None:
    """The endpoint a litellm request goes to when it names one (api_base, or base_url)."""
    for name in ("api_base", "base_url"):
        value = kwargs.get(name)
        if isinstance(value, str) and value.strip():
            return value
    return None


def untrusted_message(agent_name: str, api_base: str) -> str:
    """The one line a bid shows when an untrusted endpoint refused the placeholder key."""
    return (f"agent {agent_name!r} points at untrusted api_base {api_base}: no server key is "
            "sent there; give a key for it in Settings (or the agent's api_key) or ask an "
            f"admin to trust it via {TRUSTED_BASES_ENV}")


class UntrustedEndpoint(ModelCallError):
    """An untrusted endpoint refused the call for want of a key (the engine sent none)."""


def explain_refusal(agent_name: str, kwargs: Mapping[str, object],
                    exc: BaseException) -> BaseException:
    """`exc`, or an UntrustedEndpoint naming the fix when an endpoint that got the
    placeholder key answered 401/403: its own error ("invalid api key") would hide why."""
    status = exc.status if isinstance(exc, ModelCallError) else None
    base = request_base(kwargs)
    if status in (401, 403) and base and kwargs.get("api_key") == PLACEHOLDER_KEY:
        said = " ".join(str(exc).split())[:200]
        return UntrustedEndpoint(f"{untrusted_message(agent_name, base)} (it answered "
                                 f"{error_kind(exc)}: {said})")
    return exc


def error_kind(exc: BaseException) -> str:
    """The name a failure shows in a bid's error: a ModelCallError's kind (the class litellm
    raised, "RateLimitError"), else the exception's class name."""
    return exc.kind if isinstance(exc, ModelCallError) else type(exc).__name__
