"""`groupchat-lab completion bash|zsh|fish|tcsh|powershell`: a shell completion script,
generated from this CLI's own parser by shtab (so every command, verb, option and choice is
always the current one; file arguments complete file names).

    eval "$(groupchat-lab completion bash)"      # in ~/.bashrc
    groupchat-lab completion zsh > "${fpath[1]}/_groupchat-lab"
    groupchat-lab completion fish > ~/.config/fish/completions/groupchat-lab.fish

The script is static: completing runs no Python (shtab, unlike argcomplete, needs no hook in
the program and no process per Tab).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

SHELLS = ("bash", "zsh", "fish", "tcsh", "powershell")
# shtab.FILE, spelled out so building the parser does not import shtab.
FILES = {"bash": "_shtab_compgen_files", "zsh": "_files", "tcsh": "f",
         "fish": "(__fish_complete_path (commandline -ct))",
         "powershell": "_shtab_powershell_compgen_files"}


def files(action: argparse.Action) -> argparse.Action:
    """Mark an argument as a file name for completion."""
    action.complete = FILES  # type: ignore[attr-defined]  # read by shtab
    return action


def add_parser(sub: Any) -> None:
    completion = sub.add_parser("completion", help="print a shell completion script "
                                                   "(eval \"$(groupchat-lab completion bash)\")")
    completion.add_argument("shell", choices=SHELLS, help="the shell to complete in")


def cmd_completion(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """The script for `parser` (the CLI's whole parser, given by _main)."""
    import shtab

    sys.stdout.write(shtab.complete(parser, shell=args.shell))
    sys.stdout.flush()
    return 0
