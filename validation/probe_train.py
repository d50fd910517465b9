"""Where do small models' training steps spend their time on a GPU? An analysis script, not part of the planner; needs
a CUDA GPU. Its recorded output and what it shows: validation/measured/README.md.

The planner is 25-27 % too fast on BERT-base's autocast training step (32 x 384) and 2.7x on GPT-2 124M's (16 x 1,024)
on an H100 and an H200 (validation/REPORT.md). For each step this prints the wall time (median of 10), the GPU's busy
time and kernel count a step under torch.profiler, and the kernels' time by kind (GEMM, attention, optimizer, casts,
dropout, norms, softmax/loss, other elementwise), so the missing cost can be named. GPT-2 is run twice: with its
published 50,257-token vocabulary and padded to 50,304 (a multiple of 64, as nanoGPT and llm.c do), which tests the
misaligned-LM-head explanation directly.

`python3 validation/probe_train.py [--quick]` (--quick: two layers, small batch, for a smoke run on any device).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict

import torch
from torch.autograd import DeviceType

sys.path.insert(0, "validation")
import measure_hf as m  # noqa: E402

# Kernel name fragments -> kind; the first match wins (checked in this order).
KINDS = (("attention", ("flash", "fmha", "attention", "efficient_attention")),
         ("optimizer", ("multi_tensor", "adam", "foreach")),
         ("gemm", ("gemm", "cutlass", "xmma", "cublas", "sm90_", "sm80_", "nvjet")),
         ("dropout", ("dropout", "bernoulli", "philox")),
         ("norm", ("layer_norm", "layernorm", "rms_norm")),
         ("softmax/loss", ("softmax", "nll_loss", "cross_entropy", "log_softmax")),
         ("cast/copy", ("copy", "cast", "to_copy", "convert")))


def kind_of(name: str) -> str:
    low = name.lower()
    return next((kind for kind, keys in KINDS if any(k in low for k in keys)), "other elementwise")


def train_step(model, batch: int, seq: int, device: str):
    """An AdamW step on fp32 weights with a bf16-autocast forward, as measure_hf.py's training records."""
    model.float().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    ids = torch.randint(100, 20000, (batch, seq), device=device)
    labels = ({"start_positions": torch.zeros(batch, dtype=torch.long, device=device),
               "end_positions": torch.ones(batch, dtype=torch.long, device=device)}
              if hasattr(model, "qa_outputs") else {"labels": ids})

    def step():
        with torch.autocast(device, dtype=torch.bfloat16):
            loss = model(ids, **labels).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return step


def probe(name: str, step, device: str, steps: int = 10) -> None:
    for _ in range(3):
        step()
    m.sync(device)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        m.sync(device)
        times.append(time.perf_counter() - t0)
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(2):
            step()
        m.sync(device)
    by_kind, count, busy = defaultdict(float), 0, 0.0
    top = []
    for e in prof.key_averages():
        if e.device_type == DeviceType.CUDA and e.self_device_time_total > 0:  # kernels, not the ops above
            us = e.self_device_time_total / 2  # two steps profiled
            by_kind[kind_of(e.key)] += us
            busy += us
            count += e.count / 2
            top.append((us, e.count / 2, e.key[:90]))
    print(f"{name}: wall median {statistics.median(times) * 1e3:.2f} ms (min {min(times) * 1e3:.2f}), "
          f"GPU busy {busy / 1e3:.2f} ms a step, {count:.0f} kernels a step", flush=True)
    for kind, us in sorted(by_kind.items(), key=lambda kv: -kv[1]):
        print(f"    {kind:18s} {us / 1e3:8.2f} ms  {100 * us / busy:5.1f} %")
    for us, n, key in sorted(top, reverse=True)[:12]:
        print(f"    {us / 1e3:8.3f} ms {n:6.0f} x  {key}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print(m.environment(device), flush=True)
    bert_batch, gpt_batch = (2, 2) if args.quick else (32, 16)
    seq_bert, seq_gpt = (64, 64) if args.quick else (384, 1024)
    bert = m.build("bert", m.BERT_BASE, args.quick, device, torch.float32)
    probe(f"BERT-base QA, {bert_batch} x {seq_bert}", train_step(bert, bert_batch, seq_bert, device), device)
    del bert
    for vocab in (50257, 50304):
        gpt = m.build("gpt2", {**m.GPT2_124M, "vocab_size": vocab}, args.quick, device, torch.float32)
        probe(f"GPT-2 124M vocab {vocab}, {gpt_batch} x {seq_gpt}", train_step(gpt, gpt_batch, seq_gpt, device), device)
        del gpt
    return 0


if __name__ == "__main__":
    sys.exit(main())
