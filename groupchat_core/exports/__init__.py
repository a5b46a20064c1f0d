"""Runs leaving and entering the lab: run bundles (export, import, checks) and the flat CSV/JSON
tables. Users reach them through `groupchat_core` and the CLI."""
