"""How tables are shown: the ranking's columns (widths, formats and each column's help), and the small tables drawn
whole."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pandas as pd
import streamlit as st

from planner.views import ranking_table
from planner.views.format import fmt_sig, md_escape


def _cell(x) -> str:
    return md_escape(x, 20_000) if isinstance(x, str) else fmt_sig(x)


def small_table(rows: list[dict], formats: Mapping[str, Callable] | None = None, hide: tuple = ("gpu_id",)) -> None:
    """A few rows drawn whole with st.table, whose text wraps to the page's width (st.dataframe's canvas cuts wide
    tables at the right, and neither a reader nor a test can see what is cut): numbers to four significant figures
    (fmt_sig) unless `formats` names the column's own, text escaped (st.table's cells are Markdown), '-' for none."""
    df = pd.DataFrame(rows).drop(columns=list(hide), errors="ignore")
    style = df.style.format(_cell, na_rep="-")
    if formats:  # only these columns: the others keep the format above
        style = style.format(dict(formats), subset=list(formats), na_rep="-")
    st.table(style)


def ranking_columns(unit: str, rate_name: str, job: str, tier: str, memory_pct: float, stale_days: int) -> dict:
    """st.dataframe's column_config for the ranking table (planner.views.ranking_table.ranking_rows' columns)."""
    noun = ranking_table.NOUNS[job]
    cc = st.column_config
    return {
        "Rank": cc.NumberColumn(width=40, pinned=True, help="Feasible first, then by what the whole job bills "
                                "(compute, start, download, warm-up, billing increments), then by time; "
                                "0 = your own cards"),
        "GPU": cc.TextColumn(width=320, pinned=True, help="★ = cards you own (sidebar, section 5)"),
        "Own ($/month)": cc.NumberColumn(format="$%.4g", help="Your cards' purchase written off over the lifetime "
                                         "(data/ownership.yaml; sidebar, section 5)"),
        "Break-even (h/month)": cc.NumberColumn(format="%.0f", help="Hours of use a month above which owning your "
                                                "cards costs less than renting as many in this tier"),
        "Electricity for the job ($)": cc.NumberColumn(format="$%.3g", help="Your cards' TDP x power draw x $/kWh "
                                                       "over the job's compute time"),
        "Runs?": cc.CheckboxColumn(width=50, help="Can this GPU run the plan? If not, 'Why / notes' says why"),
        "Why / notes": cc.TextColumn(width=420, help="✗ = blocks the plan; • = a note (software requirements, "
                                     "parallelism). Hover a cell to read it whole, or click the row to explain it"),
        f"Compute time ({unit})": cc.NumberColumn(format="%.3g", width=125, help="Estimated time of the job's steps "
                                                  "on the GPU; the whole job's bill adds the pod's start, download "
                                                  "and warm-up ('Explain a GPU' shows the parts)"),
        f"Likely range ({unit})": cc.TextColumn(help="80 % range from the planner's errors on published measurements "
                                                "of sources it was not tuned on; 'no measurement': none backs a range "
                                                "for this kind of job, runtime or model ('Explain a GPU' says which)"),
        f"Calibrated time ({unit})": cc.NumberColumn(format="%.3g", help="With the efficiencies of your calibration"),
        f"Throughput ({rate_name})": cc.NumberColumn(format="%.4g", width=155, help="Average over the whole job"),
        f"{noun.capitalize()}/s": cc.NumberColumn(format="%.4g"),
        "MFU": cc.NumberColumn(format="percent", width=70, help="Model FLOPs utilization: 3 x the forward's FLOPs "
                               "(recomputation not counted) over the GPUs' dense datasheet peak in the job's time"),
        "$ per 1B tokens": cc.NumberColumn(format="$%.3g", help=f"Compute cost of a billion training tokens ({tier} "
                                           "tier)"),
        "Compute cost ($)": cc.NumberColumn(format="$%.3g", help=f"compute time x GPUs x $/GPU-hour ({tier} tier)"),
        "Whole job ($)": cc.NumberColumn(format="$%.3g", width=95, help="what the pod bills: compute plus start, image "
                                         "pull, model download, warm-up, checkpoint upload, spot rework and billing "
                                         "increments (data/job_costs.yaml; 'Explain a GPU' shows the parts)"),
        "Calibrated cost ($)": cc.NumberColumn(format="$%.3g"),
        "$/GPU-h": cc.NumberColumn(format="$%.2f", help=f"RunPod {tier} price per GPU-hour"),
        "Price date": cc.TextColumn(width="medium", help=f"When the price was read and its age in days; ⚠ = older "
                                    f"than {stale_days} days (set in the sidebar) or undated"),
        "Price source": cc.TextColumn(width="medium"),
        "Limited by": cc.TextColumn(width="small", help="memory = bandwidth-bound; compute = TFLOPS-bound; "
                                    "overhead = kernel launches; communication = GPU-to-GPU links"),
        "Batch": cc.NumberColumn(width=60, help="Per GPU; auto = the cheapest that fits"),
        "Memory (GB)": cc.NumberColumn(format="%.3g", help="Per GPU at this batch, decimal GB (1e9 bytes)"),
        "Usable (GB)": cc.NumberColumn(format="%.1f", help=f"{memory_pct:g} % (the memory target, sidebar) "
                                       "of what the GPU reports: ECC takes 1/16 on data-center GDDR cards"),
        "VRAM (GB)": cc.NumberColumn(format="%.1f", help="Decimal GB (1e9 bytes), like the memory column: "
                                     "a card sold as '24 GB' holds 24 GiB = 25.8 GB"),
        "Memory used": cc.ProgressColumn(format="percent", min_value=0.0, max_value=1.0, width=105,
                                         help=f"Memory per GPU / the card's memory; a plan may fill up to "
                                         f"{memory_pct:g} % (the memory target, sidebar), where auto batch stops"),
        "gpu_id": None,
    }
