"""Runtimes' own all-reduce kernels for small tensor-parallel messages over NVLink (data/custom_allreduce.yaml): which
runtimes, for which GPU counts and message sizes, and the one-shot and two-shot kernels' latency and bandwidth terms.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from planner import DATA_DIR
from planner.base.schema import DataFileError, Record, load_sections, unique_ids

CUSTOM_ALLREDUCE_FILE = DATA_DIR / "custom_allreduce.yaml"
KERNELS = ("one-shot", "two-shot")
MAX_GPUS = 72  # a GPU count a data file may name (an NVL72 rack)
MAX_MESSAGE_BYTES = 2**31


@dataclass(frozen=True)
class CustomKernel:
    """One custom all-reduce kernel: seconds per call and per peer, and the share of the GPU's NVLink bandwidth (one
    direction) its bytes move at."""

    id: str
    call_s: float
    peer_s: float
    link_share: float


@dataclass(frozen=True)
class CustomAllReduce:
    """A runtime's custom all-reduce: the GPU counts it runs on, the largest message it takes (bytes, exclusive: a
    larger one goes to NCCL), the message size below which each GPU count runs one-shot ((at most n GPUs, bytes),
    ascending), and its two kernels. `opt_in`: the setting a user must give to turn it on ('' when the runtime runs
    it by default); an opt-in kernel is not planned unless a run says it was on (Runtimes.opted_in)."""

    runtime: str
    gpus: tuple[int, ...]
    max_bytes: float
    one_shot_below: tuple[tuple[int, float], ...]
    one_shot: CustomKernel
    two_shot: CustomKernel
    source: str
    opt_in: str = ""

    def takes(self, message_bytes: float, n: int) -> bool:
        """Whether an all-reduce of `message_bytes` over n GPUs runs in the runtime's own kernel (else NCCL)."""
        return n in self.gpus and 0 < message_bytes < self.max_bytes

    def kernel(self, message_bytes: float, n: int) -> CustomKernel:
        """The kernel an all-reduce of `message_bytes` over n GPUs runs: one-shot below the bound of the smallest
        entry covering n GPUs, else two-shot."""
        for most, below in self.one_shot_below:
            if n <= most:
                return self.one_shot if message_bytes < below else self.two_shot
        return self.two_shot


def _kernel(rec: Record) -> CustomKernel:
    rec.check_keys(("id", "call_latency_us", "peer_latency_us", "link_share"))
    return CustomKernel(rec.text("id", choices=KERNELS), rec.number("call_latency_us", lo=0, hi=1000) * 1e-6,
                        rec.number("peer_latency_us", lo=0, hi=1000) * 1e-6, rec.number("link_share", lo=0.01, hi=1))


def _bounds(rec: Record) -> tuple[tuple[int, float], ...]:
    """one_shot_below_bytes: {GPU count: bytes}, ascending by GPU count."""
    raw = rec.raw("one_shot_below_bytes")
    if not isinstance(raw, dict) or not raw or len(raw) > MAX_GPUS:
        raise rec.fail("one_shot_below_bytes", "expected a mapping of GPU counts to message sizes in bytes")
    out = []
    for key, value in raw.items():
        sub = Record(rec.path, f"{rec.label}.one_shot_below_bytes", {"gpus": key, "bytes": value})
        if not (isinstance(key, str) and key.isdigit() and 2 <= int(key) <= MAX_GPUS):
            raise sub.fail("gpus", f"expected a GPU count from 2 to {MAX_GPUS} (quoted), got {key!r}")
        out.append((int(key), sub.number("bytes", lo=0, hi=MAX_MESSAGE_BYTES)))
    return tuple(sorted(out))


def load_custom_allreduce(path: str | Path = CUSTOM_ALLREDUCE_FILE) -> dict[str, CustomAllReduce]:
    """Each runtime's custom all-reduce by runtime id; DataFileError naming the file, record and field."""
    sections = load_sections(path, ("kernels", "runtimes"), dated=True)
    kernels = {k.id: k for k in (_kernel(Record.of(path, i, r)) for i, r in enumerate(sections["kernels"]))}
    missing = [k for k in KERNELS if k not in kernels]
    if missing:
        raise DataFileError(path, "-", "kernels", f"expected the kernels {', '.join(KERNELS)}; missing {missing[0]}")
    out = []
    for i, raw in enumerate(sections["runtimes"]):
        rec = Record.of(path, i, raw)
        rec.check_keys(("id", "gpus", "max_bytes", "one_shot_below_bytes", "opt_in", "source"))
        gpus = rec.raw("gpus")
        if not (isinstance(gpus, list) and gpus and all(isinstance(n, int) and not isinstance(n, bool)
                                                       and 2 <= n <= MAX_GPUS for n in gpus)):
            raise rec.fail("gpus", f"expected a list of GPU counts from 2 to {MAX_GPUS}")
        out.append(CustomAllReduce(rec.text("id"), tuple(gpus), rec.number("max_bytes", lo=1, hi=MAX_MESSAGE_BYTES),
                                   _bounds(rec), kernels["one-shot"], kernels["two-shot"], rec.text("source"),
                                   rec.text("opt_in", required=False, max_len=200) or ""))
    unique_ids(path, (c.runtime for c in out))
    return {c.runtime: c for c in out}
