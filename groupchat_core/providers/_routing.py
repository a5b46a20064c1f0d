"""Which provider answers a model name: an in-process one (sim/, scripted fakes) or litellm."""

from __future__ import annotations

from ._providers import InProcessModel, register_in_process, registered_in_process
from ._sim import is_sim_model
from ._sim_provider import SimProvider


def in_process_model(model_name: str) -> InProcessModel | None:
    """The in-process provider for a model name, or None for litellm; sim/ is built in."""
    prefix, sep, _ = model_name.partition("/")
    if not sep:
        return None
    local = registered_in_process(prefix)
    if local is None and is_sim_model(model_name):
        local = SimProvider()
        register_in_process(prefix, local)
    return local
