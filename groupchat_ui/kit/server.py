"""The dashboard's process entry: `python -m groupchat_ui.kit.server run SCRIPT [options]`.

Streamlit's own CLI (same arguments as `streamlit run`), after `groupchat_core.warm_up` has
loaded the model-call path in this process: the server only accepts sessions once it is warm,
so the first chat after a start reaches its first model request at once instead of seconds
later (issue 24, target 2; BENCHMARKS.md). `make run`, `groupchat-lab serve` and the browser
tests start the dashboard this way. GROUPCHAT_WARM_UP=0 skips the warm-up; a warm-up that fails
is reported in one line and the server starts anyway (the first chat then pays as before).

SIGTERM (a service manager's stop) ends the process as Ctrl-C does, with its exit hooks run
(`exit_on_sigterm`): the store's writer thread flushes what it still holds at exit.
"""

from __future__ import annotations

import os
import signal
import sys

WARM_UP_ENV = "GROUPCHAT_WARM_UP"


def warm() -> None:
    """Warm the engine, saying how long it took (or why it could not) on stderr."""
    if os.environ.get(WARM_UP_ENV, "1").strip() == "0":
        return
    from groupchat_core import warm_up

    try:
        seconds = warm_up()
    except Exception as exc:  # a server that starts cold beats one that does not start
        said = " ".join(str(exc).split())[:200]  # one line, whatever the error holds
        print(f"GroupChat Lab: warm-up skipped ({type(exc).__name__}: {said}); "
              "the first chat will load the model-call path", file=sys.stderr, flush=True)
        return
    print(f"GroupChat Lab: model-call path warmed in {seconds:.1f} s", file=sys.stderr,
          flush=True)


def exit_on_sigterm() -> None:
    """Make SIGTERM a normal exit (status 143) that runs the exit hooks.

    Why: the app is served by uvicorn (the `st.App` in streamlit_app.py), which shuts down
    gracefully on SIGTERM, puts back the handler it found and raises the signal again. With
    the default handler the process then died at once, skipping the exit hooks: the store's
    writer lost the writes it held, and coverage the data of a measured server."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))


def main() -> None:
    exit_on_sigterm()
    warm()
    from streamlit.web import cli

    sys.argv = ["streamlit", *sys.argv[1:]]
    cli.main()


if __name__ == "__main__":
    main()
