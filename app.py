"""The web page: a frame over ui/ (the Streamlit parts) and the planner core.

Every input lives in the URL's query parameters (planner.views.share), so a link is a plan. The page keeps its own
time: st.session_state['_run_ms'] is the last script run, start to end (benchmarks/app_rerun.py reads it).
"""

import time

_T0 = time.perf_counter()

import streamlit as st  # noqa: E402

from ui import answer, resources, sidebar, state  # noqa: E402

# 340 px, not Streamlit's 300: GPU names ("RTX 4070 Ti SUPER 16GB") and runtime labels fit their boxes uncut
st.set_page_config(page_title="GPU cost & throughput planner", page_icon="🧮", layout="wide",
                   initial_sidebar_state=340)
# st.html, not st.markdown(unsafe_allow_html=True): a style-only st.html takes no room on the page, and raw HTML in
# Markdown makes the browser load a 190 kB HTML parser (rehype-raw) for this one rule
st.html("""<style>
div.block-container {padding-top: 1.2rem; padding-left: 1.5rem; padding-right: 1.5rem;}
</style>""")

with resources.run_slots():  # sessions take turns (ui/resources.py: RUN_SLOTS)
    state.init()
    state.page()["full_run"] = True  # the tabs' fragment, rerun alone, finds it False
    inputs = state.inputs()
    try:
        answer.main(inputs)  # the answer first: the browser draws the ranking before the sidebar's ~30 widgets arrive
    finally:
        try:
            sidebar.sidebar(answer.fleet_of(inputs), inputs)
        finally:
            state.sync_url(state.inputs())
            st.session_state._run_ms = (time.perf_counter() - _T0) * 1e3
            state.page()["full_run"] = False
