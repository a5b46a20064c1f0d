"""The dashboard below the pages, organised by page (DESIGN.md).

app_pages/X.py calls groupchat_ui/X/.

Layout:
- `groupchat_ui/<page>/` for each page in app_pages/ (agents, run, analysis, runs, sweeps,
  settings): what that page renders and does. A change to one page lands in
  app_pages/X.py and groupchat_ui/X/.
- `groupchat_ui/kit/`: what the pages share (session state, store access, components, charts, the
  job table, presets, provider keys, safe markdown). The kit never imports a page package.
- A page package imports the kit and itself; it reaches another page only through that page's
  `actions` (a hand-over, e.g. Runs opening a run in Analysis, Agents loading a preset for Run).
- App pages import only `groupchat_ui.kit` and their own package.

Which modules may import streamlit is a naming rule (checked by
tests/architecture/test_architecture.py):
- `view.py` and `*_view.py` render, and `actions.py` holds widget callbacks (named `on_*`);
- in `groupchat_ui/kit/`, also `state.py`, `store_access.py` and `components.py`, and
  `server.py` (the process entry that warms the engine, then starts Streamlit's CLI);
- every other module is pure (`logic.py` in each page package, `charts.py`, kit's `jobs.py`,
  `safety.py`, `metrics.py`, `presets.py`, `providers.py`): it never imports streamlit, nor a
  ui module that does, so it loads and is tested without a script run (and by the CLI).

Nothing is imported here, so `import groupchat_ui.kit.outcome_charts` stays free of streamlit.
"""
