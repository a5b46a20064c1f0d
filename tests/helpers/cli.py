"""The command line as the CLI tests call it, in this process: `run_cli(capsys, "list")` gives the
exit code and what it printed, so a test reads one line of stderr instead of a traceback."""

from __future__ import annotations

import pytest

from groupchat_core.cli import main
from tests.helpers import ROOT

DEBATE = str(ROOT / "examples" / "debate.yaml")  # the example chat spec most CLI tests run


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`groupchat-lab *argv` in-process: (exit code, stdout, stderr)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err
