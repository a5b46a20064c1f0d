"""Dashboard support; only page-facing modules import streamlit (see tests/test_architecture.py).

Nothing is imported here, so `import ui.charts` stays free of streamlit for tests and the CLI.
"""
