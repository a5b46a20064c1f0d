"""Bounded response bodies: a hostile or broken server cannot make a bid read without end.

litellm builds its exception text from the whole error body and runs its secret-redaction
regexes over it on the calling thread, holding the GIL (a 10 MB body froze the shared loop for
40 s); a worker thread cannot help with that. So bodies are bounded before litellm sees them:
an error body is cut at ERROR_BODY_CAP bytes (its status, hence litellm's error class, kept),
a reply over REPLY_BODY_CAP fails unread. This covers every model litellm sends through the
OpenAI SDK with an api_base (OpenAI-compatible servers: vLLM, llama.cpp, LM Studio, ...).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import os
import weakref
from collections.abc import AsyncIterator
from typing import Any

from ._litellm import litellm_module

ERROR_BODY_CAP = 16_000  # bytes of an HTTP error body read; the rest is cut unread
REPLY_BODY_CAP = 2_000_000  # bytes of a successful reply; more fails the request unread


class ResponseTooLarge(Exception):
    """A reply body larger than any bid can need; the rest was not read."""


@functools.cache
def _capped_stream_class() -> type:
    """Build the capped body stream on first use (httpx is imported with litellm, lazily)."""
    import httpx

    class CappedStream(httpx.AsyncByteStream):
        """A response body that stops at `cap` bytes: cut with a note, or fail."""

        def __init__(self, inner: Any, cap: int, cut: bool) -> None:
            self._inner, self._cap, self._cut = inner, cap, cut

        async def __aiter__(self) -> AsyncIterator[bytes]:
            seen = 0
            async for chunk in self._inner:
                if seen + len(chunk) > self._cap:
                    if not self._cut:
                        raise ResponseTooLarge(
                            f"reply body larger than {self._cap:,} bytes; not read (a bid "
                            "reply is a few kilobytes)")
                    yield chunk[: self._cap - seen]
                    yield f"… (error body cut at {self._cap:,} bytes)".encode()
                    return
                seen += len(chunk)
                yield chunk

        async def aclose(self) -> None:
            await self._inner.aclose()

    return CappedStream


async def _identity_encoding(request: Any) -> None:
    """Ask for uncompressed bodies, so the caps count the bytes that will be parsed."""
    request.headers["Accept-Encoding"] = "identity"


async def _cap_body(response: Any) -> None:
    error = response.status_code >= 400
    cap = ERROR_BODY_CAP if error else REPLY_BODY_CAP
    response.stream = _capped_stream_class()(response.stream, cap, cut=error)


@functools.lru_cache(maxsize=1024)
def _provider(model: str, api_base: str) -> str | None:
    """litellm's provider for a model and api_base (cached: it is asked on every request)."""
    try:
        return str(litellm_module().get_llm_provider(model=model, api_base=api_base)[1])
    except Exception:
        return None


_capped_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Any, Any]] = (
    weakref.WeakKeyDictionary())


def capped_client_kwargs(litellm: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """`client=` for litellm: an OpenAI SDK client whose bodies are capped, for OpenAI-compatible
    calls with an api_base; {} otherwise (other providers use litellm's own clients)."""
    base = kwargs.get("api_base")
    if not base or "client" in kwargs or _provider(str(kwargs["model"]), base) != "openai":
        return {}
    key = kwargs.get("api_key") or os.environ.get("OPENAI_API_KEY")
    if not key:
        return {}  # litellm reports the missing key itself; no request is made
    import httpx
    from openai import AsyncOpenAI

    per_loop = _capped_clients.setdefault(asyncio.get_running_loop(), {})
    cache_key = (base, hashlib.sha256(str(key).encode()).hexdigest())
    client = per_loop.get(cache_key)
    if client is None:
        http = httpx.AsyncClient(
            follow_redirects=True,
            event_hooks={"request": [_identity_encoding], "response": [_cap_body]})
        client = AsyncOpenAI(api_key=str(key), base_url=base, http_client=http, max_retries=0)
        per_loop[cache_key] = client
    return {"client": client}


def in_chain(exc: BaseException, kind: type[BaseException]) -> BaseException | None:
    """The first exception of `kind` among exc, its causes and contexts."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
