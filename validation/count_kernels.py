"""Count the CUDA kernels and GPU-busy time of the bench's own eager workload points (planner.bench.workload), to see
whether a step is bound by the GPU's work or by the host's dispatch. An analysis script, not part of the planner;
its recorded output and what it shows: validation/measured/README.md.
"""

import time
import torch
from torch.autograd import DeviceType
from torch.profiler import profile, ProfilerActivity
from planner.bench.workload import Point, make_callable
from planner.inputs.models import load_models

DEV = "cuda" if torch.cuda.is_available() else "cpu"
cf, g2 = load_models().get("cfdna-gen"), load_models().get("gpt2-124m")
for m, kind, b, s in [(cf, "decode", 1, 128), (cf, "forward", 8, 256), (cf, "forward", 32, 256), (cf, "train", 8, 256),
                      (cf, "train", 32, 256), (g2, "train", 8, 512)][: None if DEV == "cuda" else 2]:
    try:
        pt = Point(m, kind, b, "bf16", position=s if kind == "decode" else 0, seq=0 if kind == "decode" else s)
        fn, keep = make_callable(pt, DEV)
        for _ in range(3):
            fn()
        (torch.cuda.synchronize() if DEV == "cuda" else None)
        t0 = time.perf_counter()
        for _ in range(5):
            fn()
        (torch.cuda.synchronize() if DEV == "cuda" else None)
        wall = (time.perf_counter() - t0) / 5
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            fn()
            (torch.cuda.synchronize() if DEV == "cuda" else None)
        ev = prof.events()
        k = [e for e in ev if e.device_type == DeviceType.CUDA]
        busy = sum(getattr(e, "device_time", None) or getattr(e, "cuda_time", 0.0) for e in k) / 1e3
        top = prof.key_averages()
        aten = sum(r.count for r in top if r.key.startswith("aten::"))
        print(f"{m.id} {kind} b{b} s{s}: wall {wall*1e3:.2f} ms, {len(k)} GPU kernels, GPU busy {busy:.2f} ms, "
              f"{aten} aten op calls (nested included)", flush=True)
        names = {}
        for e in k:
            names[e.name[:50]] = names.get(e.name[:50], 0) + 1
        print("   kernels by name:", sorted(names.items(), key=lambda kv: -kv[1])[:8], flush=True)
        del fn, keep
        (torch.cuda.empty_cache() if DEV == "cuda" else None)
    except Exception as exc:
        print(m.id, kind, b, "failed", type(exc).__name__, str(exc)[:200], flush=True)
