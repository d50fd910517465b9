"""GPU cost and throughput planner: the pure-Python core (never imports streamlit; Streamlit code lives in app.py and
ui/). Its layers and which may import which: docs/DEVELOPING.md, 'Layers' (tests/test_layers.py keeps them).
"""

from importlib.resources import files
from pathlib import Path

ROOT_DIR = Path(__file__).resolve().parent.parent  # the repository (validation/, examples/) when run from a checkout
DATA_DIR = Path(str(files(__name__) / "data"))  # shipped inside the package: a wheel finds it wherever it is installed
