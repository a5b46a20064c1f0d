"""The `groupchat-lab` command line, one package: `_main` holds the parser and `run`; the rest
are its commands and pieces.

    _output          JSON for scripts, quiet ends of closed pipes, --log-level
    _info            --version: app, litellm and schema versions, where the data lives
    _serve           the packaged dashboard through Streamlit's own CLI
    _store           list, show, export, import, agents
    _owner           --owner and the OS user
    _sweeps          sweep run / resume / estimate / show / export
    _sweeps_manage   sweep list / delete
"""

from ._main import COMMANDS, build_parser, main

__all__ = ["COMMANDS", "build_parser", "main"]
