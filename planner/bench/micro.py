"""Micro-benchmarks: achieved memory bandwidth (large copies), matmul TFLOPS per dtype, per-kernel launch overhead."""

from __future__ import annotations

import torch

from planner.bench.timing import Timing, measure

DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
ROUNDS = 3
COPY_ALLOCATIONS = 5  # fresh tensor pairs per copy measurement (the median kept)


def _fastest(fn, device: str, min_run_time_s: float, clock: str) -> Timing:
    """The fastest of ROUNDS medians (each over min_run_time_s / ROUNDS): other processes only slow a round down."""
    return min((measure(fn, device, min_run_time_s / ROUNDS, warmup=2 if i == 0 else 0, clock=clock)
                for i in range(ROUNDS)), key=lambda t: t.median_s)


def copy_bandwidth(device: str, mib: int, min_run_time_s: float, clock: str = "wall") -> dict:
    """y.copy_(x) on a float32 tensor of `mib` MiB: bytes moved = 2 x size (read + write), in GB/s. The median over
    COPY_ALLOCATIONS freshly allocated tensor pairs (each timed by its median run): where the pages land moved the
    development machine's copy bandwidth by up to 12 % from one allocation to the next (24.4 to 27.4 GB/s at
    512 MiB), so neither one allocation nor the luckiest of several is a stable reference."""
    n = mib * 2**20 // 4
    moved = 2 * n * 4
    runs = []
    for _ in range(COPY_ALLOCATIONS):
        x = torch.ones(n, device=device)  # the values don't matter to a copy; randn of 512 MiB takes seconds on a CPU
        y = torch.empty_like(x)
        # x and y are bound as defaults: the lambda is timed within this iteration, and the del below frees the pair
        # before the next allocation
        runs.append(measure(lambda x=x, y=y: y.copy_(x), device, min_run_time_s / COPY_ALLOCATIONS, warmup=2,
                            clock=clock))
        del x, y
    mid = sorted(runs, key=lambda t: t.median_s)[len(runs) // 2]
    return {"tensor_mib": mib, "bytes_moved": moved, "gbps": moved / mid.median_s / 1e9, "timing": mid.as_dict(),
            "allocations_gbps": [moved / t.median_s / 1e9 for t in runs]}


def supported_paths(device: str, capability: tuple[int, int] | None) -> list[str]:
    """Matmul paths to try: tf32 only on NVIDIA SM80+; the rest are tried and dropped if torch refuses."""
    paths = ["fp32", "fp16", "bf16"]
    if device == "cuda" and capability and capability >= (8, 0):
        paths.insert(1, "tf32")
    return paths


def matmul_tflops(device: str, path: str, n: int, min_run_time_s: float, clock: str = "wall") -> dict:
    """n x n x n matmul: FLOPs = 2 n^3; normally distributed inputs."""
    dtype = DTYPES[path]
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    c = torch.empty(n, n, device=device, dtype=dtype)
    old = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high" if path == "tf32" else "highest")
    try:
        t = _fastest(lambda: torch.matmul(a, b, out=c), device, min_run_time_s, clock)
    finally:
        torch.set_float32_matmul_precision(old)
    return {"n": n, "tflops": 2.0 * n**3 / t.median_s / 1e12, "timing": t.as_dict()}


def launch_overhead(device: str, min_run_time_s: float, ops: int = 200, clock: str = "wall") -> dict:
    """Seconds per tiny kernel: `ops` in-place adds on a 1-element tensor, divided by `ops`, in microseconds."""
    x = torch.zeros(1, device=device)

    def chain():
        for _ in range(ops):
            x.add_(1.0)

    t = _fastest(chain, device, min_run_time_s, clock)
    return {"ops_per_call": ops, "us_per_op": t.median_s / ops * 1e6, "timing": t.as_dict()}
