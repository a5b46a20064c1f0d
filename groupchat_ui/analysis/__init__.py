"""The Analysis page (app_pages/analysis.py): `view` renders, `actions` holds its callbacks,
`logic` is what it shows and does without streamlit."""
