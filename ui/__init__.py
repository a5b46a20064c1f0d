"""Dashboard support: charts and the job runtime are pure; only page-facing modules use streamlit.

Nothing is imported here, so `import ui.charts` stays free of streamlit for tests and the CLI.
"""
