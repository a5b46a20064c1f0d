"""The Runs page (app_pages/runs.py): `view` renders the comparison, `actions` holds its
callbacks, `logic` is what it does without streamlit."""
