"""The environment a benchmark ran in: device, memory, versions, CPU, date."""

from __future__ import annotations

import os
import platform
import subprocess
from datetime import datetime, UTC

import torch


def pick_device(requested: str = "auto") -> str:
    """'cuda', 'mps' or 'cpu': the requested one (checked), or the first available."""
    cuda, mps = torch.cuda.is_available(), torch.backends.mps.is_available()
    if requested == "auto":
        return "cuda" if cuda else "mps" if mps else "cpu"
    if requested == "cuda" and not cuda:
        raise ValueError("--device cuda: torch sees no CUDA GPU (CPU-only torch build or no driver); use --device cpu")
    if requested == "mps" and not mps:
        raise ValueError("--device mps: Apple MPS is not available here; use --device cpu")
    if requested not in ("cuda", "mps", "cpu"):
        raise ValueError(f"--device must be auto, cuda, mps or cpu, got {requested!r}")
    return requested


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    if platform.system() == "Darwin":
        try:
            return subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True,
                                  timeout=5).stdout.strip() or platform.processor()
        except (OSError, subprocess.SubprocessError):
            pass
    return platform.processor() or platform.machine() or "unknown CPU"


def system_memory_gb() -> float:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9
    except (ValueError, OSError, AttributeError):
        return 1.0


def _load() -> float:
    """1-minute load average (0 where the OS has none): other work competing for the CPU."""
    try:
        return round(os.getloadavg()[0], 2)
    except (OSError, AttributeError):
        return 0.0


def environment(device: str) -> dict:
    """Everything that changes a measurement, recorded with it."""
    env = {"device_type": device, "compute_capability": None, "cuda_version": torch.version.cuda,
           "hip_version": getattr(torch.version, "hip", None), "torch_version": torch.__version__,
           "python_version": platform.python_version(), "platform": platform.platform(),
           "cpu_model": cpu_model(), "cpu_threads": os.cpu_count(), "torch_threads": torch.get_num_threads(),
           "float32_matmul_precision": torch.get_float32_matmul_precision(),
           "date": datetime.now(UTC).isoformat(timespec="seconds"), "load_average": _load()}
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        env.update(device_name=torch.cuda.get_device_name(0), compute_capability=f"{props.major}.{props.minor}",
                   memory_gb=props.total_memory / 1e9, multiprocessors=props.multi_processor_count)
    elif device == "mps":
        env.update(device_name=f"Apple GPU ({env['cpu_model']})", memory_gb=system_memory_gb())
    else:
        env.update(device_name=env["cpu_model"], memory_gb=system_memory_gb())
    return env
