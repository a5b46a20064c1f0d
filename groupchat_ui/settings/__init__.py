"""The Settings page (app_pages/settings.py): `view` renders the remembered modes, `actions`
holds its callbacks, `logic` shapes data without streamlit."""
