"""Files the planner reads for a user and writes for them: only regular files are read, never more than a cap
(a device such as /dev/zero would fill memory, a FIFO would block), and every write is atomic (a full disk or a kill
mid-write leaves the old file whole, never a torn one)."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


class UserFileError(ValueError):
    """A file that can't be read as asked; the message names the path and what to do."""


def read_regular(path: str | Path, max_bytes: int, what: str = "file") -> bytes:
    """The bytes of a regular file of at most max_bytes; UserFileError for a missing path, a directory, a device,
    a FIFO or socket, a larger file or an unreadable one. The file is opened non-blocking and checked with fstat
    on the open descriptor, so a FIFO never blocks and a path swapped after a check is still caught."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise UserFileError(f"{path}: cannot read the {what} (no such file)") from None
    except OSError as exc:
        raise UserFileError(f"{path}: cannot read the {what} ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UserFileError(f"{path}: not a regular file (a directory, device or pipe); give the path of a {what}")
        if st.st_size > max_bytes:
            raise UserFileError(f"{path}: {st.st_size:,} bytes, larger than {max_bytes:,} bytes: not a {what}")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(max_bytes + 1)
    except OSError as exc:
        raise UserFileError(f"{path}: cannot read the {what} ({exc.strerror})") from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:  # grew while it was read
        raise UserFileError(f"{path}: larger than {max_bytes:,} bytes: not a {what}")
    return data


def write_atomic(path: str | Path, data: str | bytes) -> Path:
    """Write data to path all at once: a temporary file in the same folder, flushed to disk, then renamed over the
    target (a rename within one file system is atomic). On any failure the temporary file is removed, the old
    target is left as it was, and the OSError propagates."""
    path = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def file_version(path: str | Path) -> tuple[str, int, int]:
    """(path, modification time in ns, size in bytes): a key under which a parsed file may be memoized, so that a
    rewritten file is parsed again. A file that can't be read keys as (path, 0, -1): its loader names the problem."""
    try:
        st = Path(path).stat()
    except OSError:
        return str(path), 0, -1
    return str(Path(path).resolve()), st.st_mtime_ns, st.st_size
