"""GPU cost and throughput planner: the pure-Python core (never imports streamlit).

Layers, lowest first; a module imports only from its own layer or the ones below (tests/test_layers.py):
base (schema, expressions, units) -> inputs (catalog, models, precisions, runtimes, jobs, price snapshot,
bench result format) -> engine (plan, work per step, memory, roofline, feasibility, cost, estimate; pure) ->
tools (live prices, validation and bands, calibration, bench) -> views (rows, charts, links, exports, presets,
page logic) -> entry points (cli, __main__ modules, app.py).
"""

from pathlib import Path

ROOT_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = ROOT_DIR / "data"
