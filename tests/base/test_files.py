"""Reading a user's file (regular files only, capped) and writing ours atomically, under the faults that broke them:
device files, FIFOs, a full disk, and a kill -9 in the middle of a write."""

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from planner.base.files import UserFileError, read_regular, write_atomic

ROOT = Path(__file__).resolve().parents[2]


def test_a_regular_file_is_read_whole(tmp_path):
    (tmp_path / "r.json").write_bytes(b"{}")
    assert read_regular(tmp_path / "r.json", 10) == b"{}"


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_devices_are_refused_without_reading_them(device):
    if not Path(device).exists():
        pytest.skip(f"{device} is not on this system")
    with pytest.raises(UserFileError, match="not a regular file"):
        read_regular(device, 1_000_000, "bench result file")


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)  # nobody writes to it: a blocking open would wait forever
    with pytest.raises(UserFileError, match="not a regular file"):
        read_regular(fifo, 1_000, "bench result file")


def test_directories_missing_and_oversized_files_are_named(tmp_path):
    with pytest.raises(UserFileError, match="not a regular file"):
        read_regular(tmp_path, 1_000)
    with pytest.raises(UserFileError, match="cannot read the model file .no such file"):
        read_regular(tmp_path / "nope.yaml", 1_000, "model file")
    (tmp_path / "big.json").write_bytes(b" " * 1_001)
    with pytest.raises(UserFileError, match="1,001 bytes, larger than 1,000"):
        read_regular(tmp_path / "big.json", 1_000)


def test_a_write_that_fails_leaves_the_old_file_whole_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "snapshot.yaml"
    target.write_text("old: 1\n")

    def full_disk(fd):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space left"):
        write_atomic(target, "new: 2\n" * 10_000)
    assert target.read_text() == "old: 1\n"
    assert [p.name for p in tmp_path.iterdir()] == ["snapshot.yaml"]


def test_a_kill_in_the_middle_of_a_write_leaves_the_old_file_whole(tmp_path):
    target = tmp_path / "snapshot.yaml"
    target.write_text("old: 1\n")
    # the child writes half the data, then stops before the rename (its fsync never returns) until it is killed
    child = textwrap.dedent(f"""
        import os, sys, time
        from planner.base import files
        os.fsync = lambda fd: (print("writing", flush=True), time.sleep(60))
        files.write_atomic({str(target)!r}, "new: 2\\n" * 100_000)
    """)
    proc = subprocess.Popen([sys.executable, "-c", child], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "writing"  # the temporary file holds its data: kill now
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert target.read_text() == "old: 1\n"
    assert write_atomic(target, "new: 3\n").read_text() == "new: 3\n"  # and the next write replaces it


def test_a_written_file_is_readable_by_others(tmp_path):
    path = write_atomic(tmp_path / "task.yaml", "name: x\n")
    assert path.stat().st_mode & 0o777 == 0o644  # mkstemp makes 0600: a snapshot is shared data
