"""Token budgets and counts per model (litellm's tokenizer, a fast estimate for in-process ones)."""

from __future__ import annotations

import functools

from ._litellm import litellm_module
from ._routing import in_process_provider

DEFAULT_INPUT_BUDGET = 8192


@functools.cache
def input_budget(model_name: str | None) -> int:
    """The model's input token budget from litellm's model info; 8,192 when unknown (None: a
    model litellm does not serve, e.g. a provider the chat was given)."""
    if model_name is None or in_process_provider(model_name) is not None:
        return DEFAULT_INPUT_BUDGET
    try:
        info = litellm_module().get_model_info(model_name)
        return int(info.get("max_input_tokens") or DEFAULT_INPUT_BUDGET)
    except Exception:
        return DEFAULT_INPUT_BUDGET


def approximate_tokens(text: str) -> int:
    """A fast, slightly pessimistic token estimate (about 3.5 characters per token)."""
    return len(text) * 2 // 7 + 1


@functools.lru_cache(maxsize=65536)
def count_tokens(model_name: str | None, text: str) -> int:
    """Tokens of one text for one model; cached because history lines repeat every turn.
    None (a model litellm does not serve) and in-process models get the fast estimate."""
    if model_name is None or in_process_provider(model_name) is not None:
        return approximate_tokens(text)
    try:
        return int(litellm_module().token_counter(model=model_name, text=text))
    except Exception:
        return approximate_tokens(text)
