"""Checks before a chat or sweep with deployments spends anything: keys, and whether its costs
can be known at all.

Why: the Router path used to be judged like a direct call, so a sweep whose agents name only the
model (no api_base of their own) demanded OPENAI_API_KEY even when every deployment named its
own key variable or was an open server on this machine. Each deployment is judged on its own:

- `api_key_env` set: that variable must be set (its value is the deployment's key), and an
  `api_base` must be trusted (the provider's own, or listed in GROUPCHAT_TRUSTED_API_BASES):
  a server key never goes to an endpoint a sweep file's author chose;
- no `api_key_env`, a loopback `api_base` (127.0.0.1, localhost, ::1): an open local server
  (llama.cpp, vLLM, Ollama...), no key needed; the Router sends a placeholder;
- no `api_key_env`, any other `api_base`: refused (a server elsewhere takes a key; name the
  variable holding it);
- no `api_base`: the provider's own endpoint, with the provider's variable (e.g.
  OPENAI_API_KEY), as litellm's `validate_environment` says.

Costs: litellm prices a call only for a model in its price map; a made-up local model name
costs "unknown". A dollar budget (`max_usd`) cannot stop a sweep whose calls cost unknown, so
such a sweep is refused at start (`unknowable_costs`), rather than running past any budget.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from ._deployments import Deployment, Routes, price, untrusted_key_problem
from ._requests import is_loopback
from ._routing import in_process_provider


def key_problems(routes: Routes | None, models: Iterable[str],
                 env: Mapping[str, str] | None = None) -> list[str]:
    """One sentence per deployment (of the routed models among `models`) that cannot be
    called as configured; empty: all clear. Imports litellm only for a provider's endpoint."""
    if routes is None:
        return []
    env = os.environ if env is None else env
    problems: list[str] = []
    for group in sorted({m for m in models if routes.serves(m)}):
        for d in routes.deployments[group]:
            problem = _problem(group, d, env)
            if problem and problem not in problems:
                problems.append(problem)
    return problems


def _problem(group: str, d: Deployment, env: Mapping[str, str]) -> str | None:
    where = f"deployment {d.name!r} of {group}"
    if d.api_key_env:
        if not env.get(d.api_key_env):
            return f"{where} needs its key in {d.api_key_env}, which is not set; set it or " \
                   "drop api_key_env"
        return untrusted_key_problem(group, d, env)
    if d.api_base:
        if is_loopback(d.api_base):
            return None  # an open server on this machine
        return f"{where} calls {d.api_base} with no api_key_env; name the environment " \
               "variable holding its key in api_key_env (only a server on this machine, a " \
               "loopback api_base, goes without a key)"
    missing = _provider_keys_missing(d.model or group, env)
    if not missing:
        return None
    return f"{where} uses its provider's own endpoint but {' / '.join(missing)} is not set; " \
           "set it or name the deployment's key variable in api_key_env"


def _provider_keys_missing(model: str, env: Mapping[str, str]) -> list[str]:
    from ._litellm import litellm_module

    try:
        found = litellm_module().validate_environment(model=model)
    except Exception:  # litellm does not know it: the call says what is wrong
        return []
    missing = found.get("missing_keys") if isinstance(found, dict) else None
    if not isinstance(missing, list):
        return []
    return [str(m) for m in missing if "KEY" in str(m).upper() and not env.get(str(m))]


def unknowable_costs(models: Iterable[str], routes: Routes | None) -> list[str]:
    """The models (as litellm is asked for them) whose calls cost unknown: not in-process and
    not in litellm's price map. A routed model counts by each of its deployments' models."""
    unknown: list[str] = []
    for model in sorted(set(models)):
        if in_process_provider(model) is not None:
            continue  # sims and scripted fakes cost nothing known: $0
        asked = ([d.model or model for d in routes.deployments[model]]
                 if routes is not None and routes.serves(model) else [model])
        for name in asked:
            if price(name, 1, 1) is None and name not in unknown:
                unknown.append(name)
    return unknown


def unknowable_budget_error(max_usd: float, unknown: list[str]) -> str:
    """The one-line refusal of a dollar budget that could never be reached."""
    names = ", ".join(unknown)
    return (f"max_usd {max_usd:g} cannot bound this sweep: litellm knows no price for {names}, "
            "so its calls cost unknown and never count toward max_usd; drop max_usd and cap "
            "the sweep with max_calls instead")
