"""The price table a plan uses: the dated snapshot, or live prices shared by every session (the page never waits:
the snapshot shows while a fetch is under way), with the user's own prices on top."""

from __future__ import annotations

import streamlit as st

from planner.inputs import cloud_prices, price_snapshot
from planner.clients import live_prices
from planner.views import plan_inputs
from planner.views.format import md_escape
from ui import resources


def _api_key() -> str | None:
    key = live_prices.api_key_from_env()
    if key:
        return key
    try:
        return str(st.secrets.get(live_prices.API_KEY_ENV) or "").strip() or None
    except Exception:  # no secrets file or an unreadable one: run without a key
        return None


def _live(wait: bool = False) -> price_snapshot.PriceTable:
    return live_prices.fetch_live(resources.committed_facts().catalog, api_key=_api_key(),
                                  url=live_prices.RUNPOD_GRAPHQL_URL, wait=wait)


@st.fragment(run_every=1.0)
def await_live() -> None:
    """Polls the fetch in flight once a second and reruns the page when live prices have arrived."""
    if not _live().pending:
        st.rerun(scope="app")


def price_table(inputs: plan_inputs.Inputs) -> price_snapshot.PriceTable:
    base = _live() if inputs.psrc == "live" else resources.facts().prices
    if inputs.prov != cloud_prices.RUNPOD:
        base = cloud_prices.with_providers(base, cloud_prices.load_cloud_prices(resources.committed_facts().catalog),
                                           inputs.prov.split(","), inputs.gpus)
    return price_snapshot.with_custom(base, inputs.custom_prices) if inputs.myprice else base


def show_status(table: price_snapshot.PriceTable, inputs: plan_inputs.Inputs) -> None:
    """Says where the prices come from when it is not the plain snapshot, and polls a live fetch in flight."""
    if table.pending:
        st.info(f"Prices: {md_escape(table.message, 600)}", icon=":material/hourglass_top:")
        await_live()
    elif not table.ok or table.source != "snapshot" or inputs.myprice or inputs.prov != cloud_prices.RUNPOD:
        (st.warning if not table.ok or table.suspect else st.caption)(f"Prices: {md_escape(table.message, 600)}")
