"""What the pages share: typed session state and store access (`state`, `store_access`),
rendering components (`components`), untrusted-text rendering (`safety`), chart builders
beyond the core's (`outcome_charts`; the Analysis charts are `groupchat_core.analysis.charts`,
shared with notebooks), metric cards (`metrics`), built-in rooms (`presets`), provider keys and
failure hints (`providers`), and the one job table over the engine's background loop (`jobs`).

Nothing is imported here, so `import groupchat_ui.kit.outcome_charts` stays free of streamlit.
"""
