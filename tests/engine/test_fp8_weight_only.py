"""FP8 checkpoints on Ampere: vLLM runs them weight-only (FP8-Marlin), every other runtime refuses them."""

import pytest

from planner.engine.estimate import estimate_gpu
from planner.engine.plan import Plan
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models

FACTS = load_facts()
# Meta-Llama-3-8B by hand (config.json): 32 layers of q, o (4096 x 4096), k, v (4096 x 1024), gate, up, down
# (4096 x 14336); embeddings and LM head 128,256 x 4096 each, untied
LAYER_WEIGHTS = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336)  # 6,979,321,856
HEAD = 128256 * 4096


def _decode(precision: str, runtime: str, gpu: str):
    plan = Plan(load_models().get("llama-3-8b"), Generate(1, 1, 2), precision, runtime=runtime, batch=1)
    e = estimate_gpu(plan, FACTS.catalog.get(gpu), FACTS)
    return e, next((p for p in e.phases if p.name == "decode"), None)


def test_fp8_on_an_a100_under_vllm_streams_one_byte_weights_into_fp16_matmuls():
    """By hand, a batch-1 decode step of Llama-3-8B FP8 on an A100 under vLLM: the layers' 6.979e9 weights at 1 B
    and the 16-bit LM head (525.3e6 x 2 B) = 8.030e9 B per token, multiplied on fp16 tensor cores; FP8-Marlin's
    unpack, 1.5 instructions per weight = 2 x 1.5 x 6.979e9 = 20.9e9 FLOP-equivalents, cannot run faster than the
    A100's 19.5 TFLOPS fp32 datasheet rate (>= 1.07 ms) yet hides under the stream (8.03e9 B at <= 2,039 GB/s
    >= 3.94 ms): the step takes the stream's time. Memory: 6.979e9 x 1 B + (2 x 525.3e6 + 266,240 norm weights)
    x 2 B = 9.081 GB."""
    e, decode = _decode("fp8", "vllm", "a100-sxm-80gb")
    assert e.feasible
    assert any("weight-only (FP8-Marlin" in r.text and not r.blocking for r in e.reasons)
    linear = next(g for g in decode.groups if g.name == "linear layers")
    assert linear.compute_path == "fp16"
    assert linear.bytes == pytest.approx(LAYER_WEIGHTS * 1 + HEAD * 2, rel=0.001)
    assert not any(g.name == "dequantize weights" for g in decode.groups)  # folded under the weight stream
    assert linear.compute_s >= 2 * 1.5 * LAYER_WEIGHTS / 19.5e12
    assert linear.time_s == pytest.approx(linear.memory_s) and linear.memory_s >= linear.bytes / 2039e9
    weights = next(i for i in e.memory.items if i.name == "weights")
    norms = (2 * 32 + 1) * 4096  # two per layer and the final one, 16-bit as the embeddings
    assert weights.gb == pytest.approx((LAYER_WEIGHTS * 1 + (2 * HEAD + norms) * 2) / 1e9, rel=1e-9)


def test_fp8_on_ampere_is_refused_by_other_runtimes_with_the_vllm_path_named():
    for runtime in ("pytorch-eager", "torch-compile"):
        e, _ = _decode("fp8", runtime, "rtx-3090")
        why = [r.text for r in e.reasons if r.code == "precision" and r.blocking]
        assert not e.feasible and why and "SM89+" in why[0] and "under vllm" in why[0] and "FP8-Marlin" in why[0]


def test_fp8_on_hopper_under_vllm_keeps_its_fp8_tensor_cores():
    e, decode = _decode("fp8", "vllm", "h100-sxm")
    assert next(g for g in decode.groups if g.name == "linear layers").compute_path == "fp8"
    assert not any("weight-only" in r.text for r in e.reasons)
    e, _ = _decode("fp8", "vllm", "t4")  # Turing: no FP8 path here (vLLM's newer Turing weight-only path: not modelled)
    assert not e.feasible and not any("under vllm" in r.text for r in e.reasons)
