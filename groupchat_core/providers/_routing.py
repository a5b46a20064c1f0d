"""Which provider answers an agent's model: one the chat was given, a shared fake, a sim, or
(None here) litellm.

A chat is given providers as objects, by model-name prefix (`GroupChat(providers={"fake": p})`
routes every `fake/...` model of that chat to `p`), so two chats in one process may use
different fakes under the same prefix. `sim/` models get the built-in SimProvider.

The shared table below is a thin adapter kept for one documented API: a
`groupchat_core.testing.ScriptedBids` routes its own `model_name` in chats that were not given
it (the dashboard's job runner, sweeps and CLI build their chats from specs, which hold no
objects). It is consulted only after the chat's own providers; new code passes providers.
"""

from __future__ import annotations

from collections.abc import Mapping

from ._providers import Provider
from ._sim import is_sim_model
from ._sim_provider import SimProvider

Providers = Mapping[str, Provider]  # model-name prefix -> the provider answering it

_SIM = SimProvider()
_SHARED: dict[str, Provider] = {}


def in_process_provider(model_name: str, chosen: Providers | None = None) -> Provider | None:
    """The provider for a model name other than litellm: the chat's own for its prefix, else
    a shared fake's, else the sim provider for sim/ models; None means litellm."""
    prefix, sep, _ = model_name.partition("/")
    if not sep:
        return None
    if chosen and prefix in chosen:
        return chosen[prefix]
    shared = _SHARED.get(prefix)
    if shared is not None:
        return shared
    return _SIM if is_sim_model(model_name) else None


def runs_in_process(model_name: str, providers: Providers | None = None) -> bool:
    """True when a model is answered in this process (a sim, a chat's own provider, a shared
    fake): no network, no key, no litellm. The one check the engine and the dashboard share."""
    return in_process_provider(model_name, providers) is not None


def share_provider(prefix: str, provider: Provider) -> None:
    """Route '<prefix>/...' to `provider` in every chat not given one (the adapter above)."""
    _SHARED[prefix] = provider


def unshare_provider(prefix: str, provider: Provider) -> None:
    """Undo share_provider (if `provider` is still the one shared under that prefix)."""
    if _SHARED.get(prefix) is provider:
        del _SHARED[prefix]
