"""The Agents page (app_pages/agents.py): `view` renders, `actions` holds its callbacks,
`logic` is what it does without streamlit."""
