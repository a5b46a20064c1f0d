"""The Settings page (app_pages/settings.py): `actions` holds its callbacks."""
