"""Timing: torch.utils.benchmark on the CPU, CUDA events on NVIDIA GPUs, synchronised wall clock on Apple MPS.

Warm-up runs are excluded; the median over runs is reported with its interquartile range (seconds).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from collections.abc import Callable

import torch
import torch.utils.benchmark as tbench


@dataclass(frozen=True)
class Timing:
    median_s: float
    iqr_s: float
    runs: int
    method: str

    def as_dict(self) -> dict:
        return {"median_s": self.median_s, "iqr_s": self.iqr_s, "runs": self.runs, "method": self.method}


def synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()
    elif device == "mps":
        torch.mps.synchronize()


def _iqr(xs: list[float]) -> float:
    if len(xs) < 4:
        return 0.0
    q = statistics.quantiles(xs, n=4)
    return q[2] - q[0]


def measure(fn: Callable[[], object], device: str, min_run_time_s: float = 0.3, warmup: int = 2,
            min_runs: int = 5, max_runs: int = 1000, clock: str = "wall") -> Timing:
    """Median seconds per call of fn() after `warmup` untimed calls.

    clock 'cpu' (CPU device, one torch thread): the process's CPU time instead of wall time, so time the
    scheduler gives to other processes on a shared machine is not counted.
    """
    for _ in range(warmup):
        fn()
    synchronize(device)
    if device == "cpu":
        if clock == "cpu" and torch.get_num_threads() != 1:
            raise ValueError("clock 'cpu' needs one torch thread (--threads 1): CPU time adds up over threads")
        timer = tbench.Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads(),
                             timer=time.process_time if clock == "cpu" else time.perf_counter)
        m = timer.blocked_autorange(min_run_time=min_run_time_s)
        return Timing(m.median, m.iqr, len(m.times),
                      "torch.utils.benchmark.Timer.blocked_autorange"
                      + (" (process CPU time)" if clock == "cpu" else ""))
    times: list[float] = []
    start_all = time.perf_counter()
    if device == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        while len(times) < max_runs and (len(times) < min_runs or time.perf_counter() - start_all < min_run_time_s):
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)  # elapsed_time is in milliseconds
        return Timing(statistics.median(times), _iqr(times), len(times), "CUDA events")
    while len(times) < max_runs and (len(times) < min_runs or time.perf_counter() - start_all < min_run_time_s):
        t0 = time.perf_counter()
        fn()
        synchronize(device)
        times.append(time.perf_counter() - t0)
    return Timing(statistics.median(times), _iqr(times), len(times), f"{device} synchronize + perf_counter")
