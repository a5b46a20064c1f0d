"""What the pages share: typed session state and store access (`state`, `store_access`),
rendering components (`components`), untrusted-text rendering (`safety`), pure plotly chart
builders (`charts`), metric cards (`metrics`), built-in rooms (`presets`), provider keys and
failure hints (`providers`), and the one job table over the engine's background loop (`jobs`).

Nothing is imported here, so `import groupchat_ui.kit.charts` stays free of streamlit.
"""
