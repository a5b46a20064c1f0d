"""The Run page (app_pages/run.py): `view` is the New run panel, `live_view` the live job,
`actions` holds its callbacks, `logic` is what it does and shows without streamlit."""
