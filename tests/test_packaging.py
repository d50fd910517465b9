"""The wheel works outside the repository: built from this checkout, installed into a fresh virtual environment, run
from another directory, it finds its data files (planner.DATA_DIR, inside the package) and answers."""

import json
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The `planner` command of a venv holding the wheel (its dependencies from this interpreter's site-packages:
    the test checks the package, not PyPI)."""
    base = tmp_path_factory.mktemp("wheel")
    source = base / "source"  # a copy: setuptools builds in the source tree, and the checkout stays as it is
    shutil.copytree(ROOT / "planner", source / "planner", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(base / "dist"), str(source)], check=True, capture_output=True, text=True, timeout=300)
    [wheel] = (base / "dist").glob("gpu_planner-*.whl")
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(base / "venv")
    python = base / "venv" / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "--no-deps", "-q", str(wheel)], check=True, capture_output=True,
                   text=True, timeout=300)
    return base / "venv" / "bin" / "planner"


def _run(planner: Path, *args: str) -> subprocess.CompletedProcess:
    away = planner.parent.parent  # the venv: no data/ or planner/ of the checkout beside it
    return subprocess.run([planner, *args], cwd=away, capture_output=True, text=True, timeout=120)


def test_the_installed_wheel_lists_the_catalog_and_the_models(installed):
    gpus = _run(installed, "gpus", "--format", "json")
    assert gpus.returncode == 0, gpus.stderr[-2000:]
    ids = {row["id"] for row in json.loads(gpus.stdout)}
    assert {"h100-sxm", "rtx-4090", "a100-sxm-80gb"} <= ids
    models = _run(installed, "models", "--format", "json")
    assert models.returncode == 0, models.stderr[-2000:]
    assert {"gpt2-124m", "cfdna-gen", "sea"} <= {row["id"] for row in json.loads(models.stdout)}


def test_the_installed_wheel_estimates_from_its_own_data(installed):
    out = _run(installed, "estimate", "--model", "gpt2-124m", "--gpu", "rtx-4090", "--format", "json")
    assert out.returncode == 0, out.stderr[-2000:]
    [row] = json.loads(out.stdout)
    assert row["gpu_id"] == "rtx-4090" and row["feasible"] and row["seconds"] > 0
    # the installed package's data, not the checkout's
    where = subprocess.run([installed.parent / "python", "-c", "import planner; print(planner.DATA_DIR)"],
                           capture_output=True, text=True, cwd=installed.parent.parent, timeout=60)
    assert "site-packages" in where.stdout and str(ROOT) not in where.stdout
