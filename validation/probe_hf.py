"""Two questions about measure_hf.py's GPU timings, asked on the machine that took them. An analysis script, not part
of the planner; needs a CUDA GPU. Its recorded output and what it shows: validation/measured/README.md.

1. Why did two generate() runs of the same job differ up to threefold? Eight 64-token runs of Llama-2-7B at batch 1,
   each timed, with the host's load and clocks, and a bare decode forward step (no generate loop) timed 30 times.
2. Where does GPT-2 124M's bf16 training step (batch 16 x 1,024) spend its GPU time? torch.profiler over two steps.
"""
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, "validation")
import measure_hf as m
print("cpus", os.cpu_count(), "affinity", len(os.sched_getaffinity(0)), "load", os.getloadavg(),
      "threads", torch.get_num_threads())
mhz = [float(line.split(":")[1]) for line in open("/proc/cpuinfo") if line.startswith("cpu MHz")]
print("MHz min/median/max", min(mhz), statistics.median(mhz), max(mhz),
      next(line for line in open("/proc/cpuinfo") if line.startswith("model name")).strip())
llama = m.build("llama", m.LLAMA2_7B, False, "cuda", torch.bfloat16)
ids = torch.randint(100, 20000, (1, 128), device="cuda")
kw = dict(attention_mask=torch.ones_like(ids), do_sample=False, min_new_tokens=64, max_new_tokens=64, pad_token_id=0,
          eos_token_id=None)
with torch.inference_mode():
    llama.generate(ids, **{**kw, "min_new_tokens": 4, "max_new_tokens": 4})
    for i in range(8):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        llama.generate(ids, **kw)
        torch.cuda.synchronize()
        t = time.perf_counter() - t0
        print(f"llama b1 64 tokens run {i}: {t:.3f} s = {t/64*1e3:.2f} ms/token; load {os.getloadavg()[0]:.2f}",
              flush=True)
    # a bare forward step (no generate machinery): decode step with cache
    cache, tok = llama(ids, use_cache=True).past_key_values, ids[:, -1:]
    ts = []
    for _ in range(30):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        llama(tok, past_key_values=cache, use_cache=True)
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    print(f"bare forward decode step ms: median {statistics.median(ts) * 1e3:.2f} min {min(ts) * 1e3:.2f} "
          f"max {max(ts) * 1e3:.2f}")
del llama
torch.cuda.empty_cache()
g = m.build("gpt2", m.GPT2_124M, False, "cuda", torch.float32).train()
opt = torch.optim.AdamW(g.parameters(), lr=1e-5)
ids = torch.randint(100, 20000, (16, 1024), device="cuda")


def step():
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = g(ids, labels=ids).loss
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


for _ in range(3):
    step()
torch.cuda.synchronize()
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    for _ in range(2):
        step()
    torch.cuda.synchronize()
for key in ("device_time_total", "cuda_time_total"):
    try:
        print(prof.key_averages().table(sort_by=key, row_limit=22, max_name_column_width=60))
        break
    except Exception as exc:
        print("sort", key, "failed", exc)
