"""`groupchat-lab serve`: the dashboard from any directory, through Streamlit's own CLI.

The engine never imports streamlit or the dashboard (tests/architecture/test_architecture.py):
serve finds the app's files and hands the process over to `python -m groupchat_ui.kit.server run`
(Streamlit's CLI once the engine is warm; exec on POSIX, so signals reach Streamlit directly; a
child process elsewhere).

An installed copy serves the app packaged inside groupchat_ui (`groupchat_ui/_app/`: the entry
script, its pages and its `.streamlit/config.toml`, which Streamlit reads next to the script); a
clone serves its checkout's `streamlit_app.py`. Streamlit also reads `.streamlit/config.toml` and
`.streamlit/secrets.toml` in the directory serve is started from (e.g. a deployment's login
settings); the options below, given as flags, win over every file.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from .._errors import CliError
from .._home import CHECKOUT_ROOT, data_location, is_checkout, stray_notice
from .._terminal import terminal_text

DEFAULT_PORT = 8501
DEFAULT_ADDRESS = "127.0.0.1"


def add_parser(sub: Any) -> None:
    serve = sub.add_parser("serve", help="start the dashboard (headless; open the URL it prints)")
    serve.add_argument("--port", type=_port, default=DEFAULT_PORT,
                       help=f"TCP port to listen on (default {DEFAULT_PORT})")
    serve.add_argument("--address", default=DEFAULT_ADDRESS,
                       help=f"address to listen on (default {DEFAULT_ADDRESS}: this machine "
                            "only; 0.0.0.0 serves the network: a trusted one, else keep "
                            f"{DEFAULT_ADDRESS} behind a TLS reverse proxy)")


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text[:30]!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be from 1 to 65535, got {value}")
    return value


def app_script() -> Path:
    """The dashboard's entry script: the packaged copy, else (a clone) the checkout's."""
    import importlib.util

    spec = importlib.util.find_spec("groupchat_ui")  # located, not imported
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        packaged = Path(folder).resolve() / "_app" / "streamlit_app.py"
        if packaged.is_file():
            return packaged
    if is_checkout():
        return CHECKOUT_ROOT / "streamlit_app.py"
    raise CliError("the dashboard is missing from this installation (no "
                   "groupchat_ui/_app/streamlit_app.py); reinstall groupchat-lab")


def streamlit_args(script: Path, port: int, address: str) -> list[str]:
    """`streamlit run` arguments: headless, no file watcher, no usage statistics."""
    return ["run", str(script), "--server.headless", "true", "--server.port", str(port),
            "--server.address", address, "--server.fileWatcherType", "none",
            "--browser.gatherUsageStats", "false"]


# Streamlit's CLI, after warming the engine in the same process (groupchat_ui/kit/server.py).
SERVER_MODULE = "groupchat_ui.kit.server"
DASHBOARD_MISSING = ("the dashboard is not installed (Streamlit is missing): pip install "
                     "'groupchat-lab[dashboard]'")


def cmd_serve(args: argparse.Namespace) -> int:
    import importlib.util

    from ..store import safe_url

    if importlib.util.find_spec("streamlit") is None:  # an engine-only install
        raise CliError(DASHBOARD_MISSING)
    script = app_script()
    if args.db:  # the app reads the store from the environment, like every page
        os.environ["GROUPCHAT_DB"] = args.db
    location = data_location()
    print(terminal_text(f"GroupChat Lab on http://{args.address}:{args.port}  (data: "
                        f"{safe_url(location.url)})"), file=sys.stderr, flush=True)
    notice = stray_notice()
    if notice:
        print(terminal_text(notice, multiline=True), file=sys.stderr, flush=True)
    command = [sys.executable, "-m", SERVER_MODULE,
               *streamlit_args(script, args.port, args.address)]
    if os.name == "posix":
        os.execv(sys.executable, command)  # this process becomes the server
    return subprocess.call(command)
