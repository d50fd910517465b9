"""Another commit checked out in a temporary git worktree, for the benchmarks that alternate this tree with it
(cli_start.py, engine_catalog.py, new_session.py): one way to make it and to remove it, even after a failure."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@contextmanager
def base_worktree(ref: str) -> Iterator[Path]:
    """A detached worktree of `ref` in a temporary folder, removed when the block ends."""
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base), ref], check=True,
                       capture_output=True)
        try:
            yield base
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=True)
