"""Time Hugging Face transformers' eager generate, prefill and training steps on this machine's GPU.

`python3 validation/measure_hf.py --out FILE [--quick]`: an analysis tool like fit_fixed_cost.py, not part of the
planner. It builds Llama-2-7B, GPT-2 124M and BERT-base from their published configurations with random weights (no
download: a step's time depends on shapes and dtypes, not on weight values; generation is forced to its full length,
so random logits cannot end it early) and writes one JSON document: environment, then one record per workload with
the conditions a validation row needs and the median of its timed runs (seconds, CUDA-synchronised wall clock).
--quick shrinks every model to two layers for a smoke run on a CPU.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from datetime import datetime, UTC
from pathlib import Path

import torch

# Published configurations (the models' config.json on the Hugging Face Hub), spelled out: nothing is downloaded.
LLAMA2_7B = dict(vocab_size=32000, hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                 num_attention_heads=32, num_key_value_heads=32, max_position_embeddings=4096, rms_norm_eps=1e-5,
                 tie_word_embeddings=False)  # meta-llama/Llama-2-7b-hf
GPT2_124M = dict(vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12, n_head=12)  # openai-community/gpt2
BERT_BASE = dict(vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                 intermediate_size=3072, max_position_embeddings=512)  # google-bert/bert-base-uncased
LAYER_KEYS = ("num_hidden_layers", "n_layer")


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def timed(fn, device: str, warmup: int, runs: int) -> dict:
    """Median and spread of `runs` calls of fn() after `warmup` untimed ones (seconds, synchronised wall clock)."""
    for _ in range(warmup):
        fn()
    sync(device)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - t0)
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times), "runs": runs,
            "times_s": times}


def build(kind: str, config: dict, quick: bool, device: str, dtype: torch.dtype):
    """A randomly initialised model of the named transformers class in `dtype` on `device`."""
    import transformers
    cfg_cls, model_cls = {"llama": ("LlamaConfig", "LlamaForCausalLM"), "gpt2": ("GPT2Config", "GPT2LMHeadModel"),
                          "bert": ("BertConfig", "BertForQuestionAnswering")}[kind]
    cfg = dict(config)
    if quick:
        cfg.update({k: 2 for k in LAYER_KEYS if k in cfg})
    with torch.device(device):
        model = getattr(transformers, model_cls)(getattr(transformers, cfg_cls)(**cfg))
    return model.to(dtype).eval()


def generate_record(model, batch: int, prompt: int, new: int, device: str, runs: int) -> dict:
    """generate(): greedy, KV cache, exactly `new` tokens after a `prompt`-token random prompt per sequence."""
    ids = torch.randint(100, 20000, (batch, prompt), device=device)
    mask = torch.ones_like(ids)
    kw = dict(attention_mask=mask, do_sample=False, use_cache=True, min_new_tokens=new, max_new_tokens=new,
              pad_token_id=0, eos_token_id=None)
    with torch.inference_mode():
        model.generate(ids, **{**kw, "min_new_tokens": 4, "max_new_tokens": 4})  # warm-up: kernels, allocator
        out = []
        t = timed(lambda: out.append(model.generate(ids, **kw)), device, warmup=0, runs=runs)
    assert out[-1].shape == (batch, prompt + new), f"generate returned {tuple(out[-1].shape)}"
    return {"regime": "decode", "batch": batch, "prompt_tokens": prompt, "gen_tokens": new, **t,
            "tokens_per_s": batch * new / t["median_s"]}


def prefill_record(model, batch: int, prompt: int, device: str) -> dict:
    """One forward pass over the prompt, logits for the last position only (what a prefill before decoding needs)."""
    ids = torch.randint(100, 20000, (batch, prompt), device=device)
    with torch.inference_mode():
        t = timed(lambda: model(ids, use_cache=True, logits_to_keep=1), device, warmup=3, runs=10)
    return {"regime": "prefill", "batch": batch, "prompt_tokens": prompt, **t}


def train_record(model, batch: int, seq: int, device: str, amp: torch.dtype | None, steps: int) -> dict:
    """Optimizer steps of AdamW on fp32 weights; `amp` autocasts the forward to bf16 (mixed precision)."""
    model.float().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    ids = torch.randint(100, 20000, (batch, seq), device=device)
    is_qa = hasattr(model, "qa_outputs")
    labels = ({"start_positions": torch.zeros(batch, dtype=torch.long, device=device),
               "end_positions": torch.ones(batch, dtype=torch.long, device=device)} if is_qa else {"labels": ids})

    def step():
        with torch.autocast(device, dtype=amp, enabled=amp is not None):
            loss = model(ids, **labels).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    t = timed(step, device, warmup=3, runs=steps)
    return {"regime": "train", "batch": batch, "seq_len": seq, "amp": str(amp).replace("torch.", "") if amp else None,
            **t, "samples_per_s": batch / t["median_s"]}


def environment(device: str) -> dict:
    import transformers
    env = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "torch": torch.__version__,
           "cuda": torch.version.cuda, "transformers": transformers.__version__, "python": platform.python_version(),
           "cpu_threads": torch.get_num_threads()}
    try:
        env["cpu_model"] = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                                if line.startswith("model name"))
    except (OSError, StopIteration):
        env["cpu_model"] = platform.processor()
    if device == "cuda":
        p = torch.cuda.get_device_properties(0)
        env.update(device_name=torch.cuda.get_device_name(0), sms=p.multi_processor_count,
                   memory_gib=p.total_memory / 2**30, cudnn=torch.backends.cudnn.version())
    return env


# Prompt lengths of the long-context set: decode after short and long inputs (up to Llama-2's 4,096 positions less the
# 64 generated tokens), the question issue 37 asks of eager transformers.
LONG_PROMPTS = (128, 1024, 2048, 4032)


def plan(quick: bool, which: str = "default") -> list[tuple]:
    """(model kind, config, dtype, job, args): Llama-2-7B decode over batch and length, its prefill, GPT-2 decode
    at batch 1 (launch-bound), BERT-base SQuAD-shaped and GPT-2 training steps. which='long-context': Llama-2-7B at
    batch 1, 64 tokens after each of LONG_PROMPTS, and the 1,024-token generation again (is its slowness the first
    call's?)."""
    bf16 = torch.bfloat16
    if which == "long-context":
        return [("llama", LLAMA2_7B, bf16, "generate", (1, p, 64)) for p in LONG_PROMPTS] + [
            ("llama", LLAMA2_7B, bf16, "generate", (1, 128, 1024))]
    if quick:
        return [("llama", LLAMA2_7B, bf16, "generate", (1, 16, 8)), ("llama", LLAMA2_7B, bf16, "prefill", (1, 64)),
                ("bert", BERT_BASE, torch.float32, "train", (2, 64, bf16))]
    return [("llama", LLAMA2_7B, bf16, "generate", (b, 128, 256)) for b in (1, 8, 32, 64)] + [
        ("llama", LLAMA2_7B, bf16, "generate", (1, 128, 1024)),
        ("llama", LLAMA2_7B, bf16, "prefill", (1, 2048)), ("llama", LLAMA2_7B, bf16, "prefill", (8, 512)),
        ("gpt2", GPT2_124M, bf16, "generate", (1, 128, 256)),
        ("bert", BERT_BASE, torch.float32, "train", (32, 384, bf16)),
        ("gpt2", GPT2_124M, torch.float32, "train", (16, 1024, bf16))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--set", choices=("default", "long-context"), default="default", dest="which")
    ap.add_argument("--dry-run", action="store_true", help="write the workloads' conditions without timing them "
                                                           "(for predictions made before measuring)")
    a = ap.parse_args(argv)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    doc = {"kind": "hf-transformers timings (validation/measure_hf.py)", "environment": environment(device),
           "records": []}
    models: dict[str, object] = {}
    for kind, config, dtype, job, args in plan(a.quick, a.which):
        if a.dry_run:
            rec = ({"regime": "decode", "batch": args[0], "prompt_tokens": args[1], "gen_tokens": args[2]}
                   if job == "generate" else {"regime": job, "batch": args[0]})
            doc["records"].append(dict(rec, model=kind, dtype=str(dtype).replace("torch.", ""), job=job))
            continue
        key = f"{kind}-{dtype}"
        if key not in models:
            models.clear()
            if device == "cuda":
                torch.cuda.empty_cache()
            models[key] = build(kind, config, a.quick, device, dtype)
        model = models[key]
        print(f"{kind} {job} {args} ...", flush=True)
        try:
            if job == "generate":
                runs = 3 if a.which == "long-context" else 1 if args[2] > 512 else 2
                rec = generate_record(model, *args, device=device, runs=runs)
            elif job == "prefill":
                rec = prefill_record(model, *args, device=device)
            else:
                rec = train_record(model, *args[:2], device=device, amp=args[2], steps=3 if a.quick else 10)
                models.clear()  # its weights are fp32 now
        except Exception as exc:  # one failed workload must not lose the others' timings
            rec = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        rec.update(model=kind, config=config, dtype=str(dtype).replace("torch.", ""), job=job,
                   attn_implementation=getattr(getattr(model, "config", None), "_attn_implementation", None))
        doc["records"].append(rec)
        print("  ", {k: v for k, v in rec.items() if k != "config"}, flush=True)
        a.out.write_text(json.dumps(doc, indent=1))
    if a.dry_run:
        a.out.write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
