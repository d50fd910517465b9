"""GPU cost and throughput planner: the pure-Python core (never imports streamlit).

Layers, lowest first; a module imports only from its own layer or the ones below (tests/test_layers.py):
base (schema, expressions, units) -> inputs (catalog, models, precisions, runtimes, jobs, price snapshot,
bench result format) -> engine (plan, work per step, memory, roofline, feasibility, cost, estimate, ranking;
pure) -> tools (clients: live prices and the Hub; validation and bands; calibration; profiling; bench) -> views
(rows, charts, links, exports, presets, what each screen shows) -> ui/ (the Streamlit parts, outside this package)
-> entry points (cli, __main__ modules, app.py, serve.py).
"""

from pathlib import Path

ROOT_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = ROOT_DIR / "data"
