"""Checking provider keys before anything is spent, and recognising a credential failure.

Why: without a key every bid of a run fails, and a sweep used to make 90 failing calls over 30
cells before it said `0/30 cells done`. `check_credentials` asks litellm which environment
variables each agent's provider needs (`litellm.validate_environment`) before a run or sweep
starts, and lists every problem at once. It never blocks what it cannot judge:

- in-process models (`sim/`, scripted fakes) and agents with their own `api_key` are skipped;
- providers whose credentials may come from outside the environment (AWS, Google and Azure
  credential chains: bedrock, sagemaker, vertex_ai, azure) and providers litellm does not know
  are skipped;
- only missing keys count: settings litellm also lists (OLLAMA_API_BASE, a project or region)
  often have defaults, and a call without them fails with its own clear error;
- an OpenAI-compatible server on this machine (`openai/<name>` with a loopback `api_base`)
  needs no key: the engine sends a placeholder when none is set (_requests.py);
- an agent at an api_base that is not trusted (_endpoints.py) never gets a key from the
  environment, so whether one is set there says nothing about it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ._endpoints import endpoint_trusted

if TYPE_CHECKING:
    from .._agent import Agent

# Providers that can authenticate without an environment variable (instance roles, ~/.aws,
# gcloud application-default credentials): validate_environment would wrongly flag them.
_AMBIENT_PROVIDERS = frozenset({
    "bedrock", "bedrock_converse", "sagemaker", "sagemaker_chat", "vertex_ai", "vertex_ai_beta",
    "azure", "azure_ai",  # Entra ID / managed identity
})
_KEYISH = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL", re.I)
_AUTH_FAILURE = re.compile(
    r"AuthenticationError|PermissionDeniedError|\b401\b|incorrect api key|invalid api key|"
    r"invalid x-api-key|missing credentials|api key not valid|unauthori[sz]ed", re.I)


def is_credential_failure(error: str | None) -> bool:
    """Whether a failed call's error text is a rejected or missing credential."""
    return bool(error) and _AUTH_FAILURE.search(error or "") is not None


def _skipped(agent: Agent) -> bool:
    from ._requests import is_loopback
    from ._routing import in_process_provider

    if in_process_provider(agent.model_name) is not None or agent.api_key is not None:
        return True
    if agent.model_name.startswith("openai/") and is_loopback(agent.api_base):
        return True  # a local server: the engine sends a placeholder key
    # an untrusted base gets no server key anyway (_endpoints.py): nothing to check
    return not endpoint_trusted(agent.model_name, agent.api_base)


def _provider(litellm: Any, agent: Agent) -> str | None:
    try:
        return str(litellm.get_llm_provider(agent.model_name, api_base=agent.api_base)[1])
    except Exception:  # litellm does not know it: nothing to validate
        return None


def _missing(litellm: Any, agent: Agent) -> list[str]:
    version = agent.litellm_kwargs.get("api_version")
    try:
        found = litellm.validate_environment(
            model=agent.model_name, api_base=agent.api_base,
            api_version=version if isinstance(version, str) else None)
    except Exception:
        return []
    missing = found.get("missing_keys") if isinstance(found, dict) else None
    if not isinstance(missing, list):
        return []
    return [str(m) for m in missing if _KEYISH.search(str(m))]


def _problem(agent: Agent, missing: list[str]) -> str:
    name, model = agent.agent_name, agent.model_name
    names = ", ".join(missing)
    if len(missing) == 1:  # e.g. OPENAI_API_KEY
        return f"agent {name!r} uses {model} but {names} is not set; set it or give the agent " \
               "an api_key"
    # e.g. GOOGLE_API_KEY, GEMINI_API_KEY: litellm reads whichever is set
    return f"agent {name!r} uses {model} but none of {names} is set; set one or give the " \
           "agent an api_key"


def check_credentials(agents: Iterable[Agent]) -> list[str]:
    """Every missing-credential problem of these agents, one sentence each (empty: all clear).

    Pure apart from reading the environment through litellm; imports litellm only when some
    agent needs checking (call it off the event loop's thread when litellm is not loaded yet).
    """
    todo = [a for a in agents if not _skipped(a)]
    if not todo:
        return []
    from ._litellm import litellm_module

    litellm = litellm_module()
    problems: list[str] = []
    for agent in todo:
        provider = _provider(litellm, agent)
        if provider is None or provider in _AMBIENT_PROVIDERS:
            continue
        missing = _missing(litellm, agent)
        if missing:
            problem = _problem(agent, missing)
            if problem not in problems:
                problems.append(problem)
    return problems


def credentials_error(problems: list[str]) -> str:
    """The one-line ConfigError text for a list of problems."""
    count = len(problems)
    head = "missing credentials" if count == 1 else f"missing credentials ({count} problems)"
    return f"{head}: " + "; ".join(problems)
