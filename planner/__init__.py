"""GPU cost and throughput planner: the pure-Python core (never imports streamlit).

Imports point one way, lowest first (docs/DEVELOPING.md has the layer map; tests/test_layers.py keeps it):
base -> inputs -> engine -> tools (clients, validation, calibration, profiling, bench) -> views; Streamlit code
lives outside this package, in app.py and ui/.
"""

from pathlib import Path

ROOT_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = ROOT_DIR / "data"
