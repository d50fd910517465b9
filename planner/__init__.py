"""GPU cost and throughput planner: the pure-Python core (never imports streamlit).

Imports point one way, lowest first (docs/DEVELOPING.md has the layer map; tests/test_layers.py keeps it):
base -> inputs -> engine -> tools (clients, validation, calibration, profiling, bench) -> views; Streamlit code
lives outside this package, in app.py and ui/.
"""

from importlib.resources import files
from pathlib import Path

ROOT_DIR = Path(__file__).resolve().parent.parent  # the repository (validation/, examples/) when run from a checkout
DATA_DIR = Path(str(files(__name__) / "data"))  # shipped inside the package: a wheel finds it wherever it is installed
