"""Achieved DRAM rates of eager PyTorch's unfused decode attention (transformers 4.35's LlamaAttention: torch.cat of
the cache, torch.matmul(query, key.transpose(2, 3)), the mask add, softmax in float32, torch.matmul(weights, value))
against a plain copy, a fused SDPA call and a weight GEMV, at Llama-2-13B's shape (40 heads of 128, fp16).

Run on a device machine: `OUT=dir python3 validation/probe_decode_attention.py` writes dir/attn_probe.json
(validation/measured/2026-11-27_nvidia-h200_d_decode-attention.json came from this code, sent compacted in the device
command). Each figure is bytes moved / time with CUDA events over 40 calls after 4 warm-up calls: `kv` is one of K or
V (batch x 40 x p x 128 x 2 B); cat moves 2 kv (read + write), QK^T and AV one kv each, the layer 6 kv, SDPA 2 kv."""

import json
import os

import torch

DTYPE = torch.float16
HEADS, HEAD_DIM = 40, 128  # Llama-2-13B
MLP_OUT, HIDDEN = 13824, 5120


def timed(fn, iters: int = 40) -> float:
    """Seconds per call of fn, CUDA events around `iters` calls after 4 warm-up calls."""
    for _ in range(4):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / iters * 1e-3


def shape_row(b: int, p: int) -> dict:
    """One batch and cache length: each kernel's seconds and GB/s."""
    k = torch.randn(b, HEADS, p, HEAD_DIM, dtype=DTYPE, device="cuda")
    v = torch.randn_like(k)
    k_new = torch.randn(b, HEADS, 1, HEAD_DIM, dtype=DTYPE, device="cuda")
    q = torch.randn_like(k_new)
    mask = torch.zeros(b, 1, 1, p + 1, dtype=DTYPE, device="cuda")
    kv = b * HEADS * p * HEAD_DIM * 2
    kc, vc = torch.cat([k, k_new], 2), torch.cat([v, k_new], 2)
    w = torch.softmax(torch.matmul(q, kc.transpose(2, 3)), -1, dtype=torch.float32).to(DTYPE)

    def layer():
        a, c = torch.cat([k, k_new], 2), torch.cat([v, k_new], 2)
        s = torch.matmul(q, a.transpose(2, 3)) / 11.3
        s = s + mask
        s = torch.softmax(s, -1, dtype=torch.float32).to(DTYPE)
        return torch.matmul(s, c)

    r = dict(b=b, p=p, kv=kv, cat=timed(lambda: torch.cat([k, k_new], 2)),
             qk=timed(lambda: torch.matmul(q, kc.transpose(2, 3))), pv=timed(lambda: torch.matmul(w, vc)),
             layer=timed(layer), sdpa=timed(lambda: torch.nn.functional.scaled_dot_product_attention(q, kc, vc)))
    r.update(cat_gbps=2 * kv / r["cat"] / 1e9, qk_gbps=kv / r["qk"] / 1e9, pv_gbps=kv / r["pv"] / 1e9,
             layer_gbps=6 * kv / r["layer"] / 1e9, sdpa_gbps=2 * kv / r["sdpa"] / 1e9)
    return r


def copy_gbps() -> float:
    """A 2 GiB fp16 tensor copied: read + write over the time."""
    x = torch.empty(2**30, dtype=DTYPE, device="cuda")
    y = torch.empty_like(x)
    return 4 * x.numel() / timed(lambda: y.copy_(x), 20) / 1e9


def gemv_gbps(m: int) -> float:
    """Llama-2-13B's MLP up-projection weight streamed by an fp16 linear over m rows."""
    weight = torch.randn(MLP_OUT, HIDDEN, dtype=DTYPE, device="cuda")
    a = torch.randn(m, HIDDEN, dtype=DTYPE, device="cuda")
    return weight.numel() * 2 / timed(lambda: torch.nn.functional.linear(a, weight)) / 1e9


def main() -> None:
    out = {"dev": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": []}
    out["copy_gbps"] = copy_gbps()
    for b in (1, 4, 8, 16, 32):
        for p in (512, 1024, 2048):
            out["rows"].append(shape_row(b, p))
            print({k: v for k, v in out["rows"][-1].items() if k.endswith("gbps") or k in "bp"}, flush=True)
    for m in (1, 16):
        out[f"gemv{m}_gbps"] = gemv_gbps(m)
    with open(os.path.join(os.environ["OUT"], "attn_probe.json"), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
