"""Command line for the local LLM server: `install` once, then `serve` (see _local_llm.py).

    python -m groupchat_core.testing.local_llm install
    python -m groupchat_core.testing.local_llm serve [--port 8080] [--n-ctx 2048]
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence

from .._errors import ConfigError
from ._local_llm import LocalLLMServer, install, llm_home


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m groupchat_core.testing.local_llm",
                                     description="A real local LLM (SmolLM2-135M) with no key.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("install", help="build the server's environment (once per machine)")
    serve = sub.add_parser("serve", help="serve the OpenAI-compatible API until Ctrl-C")
    serve.add_argument("--port", type=int, default=8080, help="port on 127.0.0.1 (default 8080)")
    serve.add_argument("--n-ctx", type=int, default=2048, help="context window in tokens")
    args = parser.parse_args(argv)
    try:
        if args.command == "install":
            print(f"building the local LLM server in {llm_home()} (5-10 minutes, once)...",
                  file=sys.stderr)
            install()
            print("installed", file=sys.stderr)
            return 0
        server = LocalLLMServer(port=args.port, n_ctx=args.n_ctx).start()
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"SmolLM2-135M serving on {server.base_url} (model {server.model_name!r}, any "
          "api_key); Ctrl-C stops it", file=sys.stderr)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        while True:
            signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
