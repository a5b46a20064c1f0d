"""Pieces of the `groupchat-lab` command line; groupchat_core/cli.py holds its parser and `run`.

    output   JSON for scripts, quiet ends of closed pipes, --log-level
    info     --version: app, litellm and schema versions, where the data lives
    serve    the packaged dashboard through Streamlit's own CLI
    store    list, show, export, import, agents
"""
