"""GroupChat Lab dashboard entry point: page config, session state, sidebar, navigation.

Offline by default (sim/ agents need no key). Pages live in app_pages/, registered explicitly:
each reads state, takes input in forms and calls its own package in
groupchat_ui/ (groupchat_ui/__init__.py).

Two ways this file runs. `streamlit run` (and `make run`, which calls it) finds the `st.App`
at the bottom and imports this file as a module (`__name__` is "streamlit_app"): the app is
served with the live channel's routes beside it (kit/live_routes.py: a running job's tokens,
bids and settling pushed to its Run page). Streamlit then runs this same file as the page
script (`__name__` is "__main__"), once per rerun: `main()`.
"""

from __future__ import annotations

import os

# Before anything imports litellm: use the bundled price map instead of fetching it.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import streamlit as st  # noqa: E402
from streamlit.navigation.page import StreamlitPage  # noqa: E402

from groupchat_ui.kit import live_routes  # noqa: E402

if __name__ == "__main__":  # the page script; the app's module imports no cached function
    from groupchat_ui.kit import access, components, form_memory, state, store_access

# The favicon inline (Material's "forum" glyph; Streamlit sends an SVG string as a data URI): a
# `:material/...` icon made the browser fetch it from Google's font host on every page load.
FAVICON = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><path fill="#ff4b4b" '
           'd="M21 6h-2v9H6v2c0 .55.45 1 1 1h11l4 4V7c0-.55-.45-1-1-1zm-4 6V3c0-.55-.45-1-1-1'
           'H3c-.55 0-1 .45-1 1v14l4-4h10c.55 0 1-.45 1-1z"/></svg>')
# (file in app_pages/, title, Material icon); Run is the landing page. The folder is not called
# `pages/`: Streamlit would then serve deep links (/agents) as legacy pages-folder scripts,
# skipping this entry point, until someone opened the root URL.
PAGES = [
    ("agents", "Agents", "groups"),
    ("run", "Run", "play_circle"),
    ("analysis", "Analysis", "monitoring"),
    ("runs", "Runs", "table_rows"),
    ("sweeps", "Sweeps", "grid_on"),
    ("settings", "Settings", "settings"),
]


def main() -> None:
    """One run of the page script: config, who this is, the sidebar, the page asked for."""
    st.set_page_config(page_title="GroupChat Lab", page_icon=FAVICON, layout="wide")
    session = state.get()
    # Login (optional): with `[auth]` in .streamlit/secrets.toml, a signed-out visitor sees only
    # the login, before any page, store read or job; without it everyone is the local user.
    if not state.identify(session):
        components.login_screen()
        st.stop()
    state.reattach(session, store_access.job_registry())  # a reload keeps this browser's jobs
    form_memory.restore(session.owner, st.session_state)  # and its Run and Sweeps forms
    # Remembered here, at the start of each run, where session state holds every value the
    # browser just sent: after `st.stop()` (or with a rerun pending) reading it raises, so a
    # `finally` after page.run() lost the Sweeps form, whose page ends in st.stop() until a
    # sweep exists.
    form_memory.remember(session.owner, st.session_state)
    pages = {slug: st.Page(f"app_pages/{slug}.py", title=title, icon=f":material/{icon}:",
                           url_path=slug) for slug, title, icon in PAGES}

    def home() -> None:
        """The root URL opens the Run page at its own slug (keeping `?job=` and the like).

        Why not `default=True` on the Run page: Streamlit serves the default page at "/" only,
        and "/run" then answers "Page not found"; every page must have a working slug."""
        st.switch_page(pages["run"], query_params=st.query_params.to_dict())

    root = st.Page(home, title="Run", url_path="home", default=True, visibility="hidden")
    # A guest gets no menu and no sidebar (no jobs, no data location): its room is all it has.
    page = st.navigation([root, *pages.values()], position="hidden" if session.guest else "sidebar")
    if session.guest and not access.guest_may_open(page.url_path):
        refuse_guest(session, pages["run"], page.title)
        st.stop()
    components.begin_page()  # before anything draws: the page's one timer is free
    if not session.guest:
        components.sidebar(session, store_access.job_registry(), store_access.data_location())
    page.run()


def refuse_guest(session: state.SessionState, run_page: StreamlitPage, title: str) -> None:
    """A room guest (kit/access.py) asked for another page: one line and the way back, and the
    page's script never runs, so none of its actions is even drawn for this session."""
    st.error(access.guest_refusal(f"the {title} page"), icon=":material/block:")
    job = {"job": session.current_job} if session.current_job else None
    st.page_link(run_page, label="Back to the room", icon=":material/forum:", query_params=job)


if __name__ == "__main__":  # Streamlit runs the page script
    main()
else:  # `streamlit run` imports it: the app, with the live channel beside it
    app = st.App(__file__, routes=live_routes.routes())
