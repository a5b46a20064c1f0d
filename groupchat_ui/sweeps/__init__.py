"""The Sweeps page (app_pages/sweeps.py): `view` defines, launches and watches a sweep,
`results_view` reads one from the store, `logic` and `charts` are pure."""
