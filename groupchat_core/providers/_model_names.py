"""Is each agent's model one that can answer? Checked before a run starts, offline.

Why: a misspelt model (`gpt-4o-mni`, `opena/gpt-4o`, `sim/balaced`) used to be found only mid-run,
when its first bid failed. This reads only what is on this machine (litellm's routing rules and
its bundled model list, the sim personas); it makes no network call. It refuses only what can be
judged, and never what a server of the user's own may serve:

- sims: the persona must exist;
- models served in-process (a chat's fakes), by the chat's deployments, or at an agent's own
  `api_base` (a local or self-hosted server takes any name) are not judged;
- a name litellm cannot route at all (no known provider prefix, no known bare model) is refused;
- for the providers whose catalogue litellm lists in full (OpenAI, Anthropic, Gemini, Mistral,
  DeepSeek, xAI), an unlisted name is refused; the others (Ollama, vLLM, OpenRouter, Together,
  Bedrock...) serve names litellm cannot know, so any name passes.

Each refusal says which agent, and "did you mean" with the nearest known names.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ._routing import in_process_provider
from ._sim import PERSONAS, SIM_PREFIX, is_sim_model

if TYPE_CHECKING:
    from .._agent import Agent

# Providers whose model list litellm ships in full: an unlisted name there is a typo or retired.
CLOSED_CATALOGUES = frozenset({"openai", "anthropic", "gemini", "mistral", "deepseek", "xai"})


def model_problems(agents: Iterable[Agent],
                   served: Callable[[str], bool] = lambda _model: False) -> list[str]:
    """One sentence per agent whose model cannot answer (empty: all clear). `served(model)`:
    the chat's deployments answer it (then it is not judged)."""
    problems: list[str] = []
    for agent in agents:
        problem = _problem(agent, served)
        if problem is not None and problem not in problems:
            problems.append(problem)
    return problems


def _problem(agent: Agent, served: Callable[[str], bool]) -> str | None:
    model = agent.model_name
    head = f"agent {agent.agent_name!r} uses model {model!r}"
    if is_sim_model(model):
        persona = model[len(SIM_PREFIX):]
        if persona in PERSONAS:
            return None
        return head + ", which is no sim persona" + _did_you_mean(
            model, [SIM_PREFIX + p for p in PERSONAS], f"; sims: {', '.join(sorted(PERSONAS))}")
    if agent.api_base or served(model) or in_process_provider(model) is not None:
        return None
    provider = _provider_of(model)
    if provider is None:
        prefix, slash, rest = model.partition("/")
        if slash and (close := difflib.get_close_matches(prefix, _providers(), n=3)):
            known = [f"{p}/{rest}" for p in close]  # a misspelt provider prefix
        else:
            known = sorted(_all_names())
        return head + ", which litellm cannot route (no known provider)" + _did_you_mean(
            model, known, "; give it a provider prefix, e.g. openai/NAME, or an api_base")
    if provider not in CLOSED_CATALOGUES:
        return None
    names = _names_of(provider)
    bare = model.split("/", 1)[1] if model.startswith(provider + "/") else model
    if bare in names:
        return None
    return head + f", which {provider} does not list (litellm's model list)" + _did_you_mean(
        bare, sorted(names), "; for a server of your own give the agent an api_base")


def _did_you_mean(name: str, known: list[str], otherwise: str) -> str:
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    return f": did you mean {', '.join(close)}?" if close else otherwise


def _provider_of(model: str) -> str | None:
    from ._litellm import litellm_module

    litellm = litellm_module()
    try:
        return str(litellm.get_llm_provider(model)[1])
    except Exception:  # litellm raises BadRequestError for a name it cannot route
        return None


@functools.cache
def _names_of(provider: str) -> frozenset[str]:
    """The model names litellm lists for a provider, without the `provider/` prefix."""
    from ._litellm import litellm_module

    litellm = litellm_module()
    listed = list(litellm.models_by_provider.get(provider, ()))
    listed += [k for k, v in litellm.model_cost.items() if v.get("litellm_provider") == provider]
    return frozenset(k.split("/", 1)[1] if k.startswith(provider + "/") else k for k in listed)


def _providers() -> list[str]:
    from ._litellm import litellm_module

    return [str(getattr(p, "value", p)) for p in litellm_module().provider_list]


@functools.cache
def _all_names() -> frozenset[str]:
    """Bare chat models litellm routes without a prefix, and `provider/name` forms."""
    from ._litellm import litellm_module

    litellm = litellm_module()
    return frozenset(k for k, v in litellm.model_cost.items() if v.get("mode") == "chat")
