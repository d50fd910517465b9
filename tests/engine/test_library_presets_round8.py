"""Round 8's quantized rows run the library presets their own conditions name (validation/conditions_read_after.yaml,
issue 37 P3), and vLLM before AWQ-Marlin multiplies AWQ checkpoints with AutoAWQ's GEMM kernel (awq-gemm)."""

import pytest

from planner.engine.estimate import estimate_gpu
from planner.engine.plan import Plan
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models
from planner.validation.measured import conditions_read_after

FACTS = load_facts()
RTX_4090 = FACTS.catalog.get("rtx-4090")
# 32-bit integer instructions per second on the RTX 4090: 64 INT32 lanes per 128 fp32 at compute capability 8.9
# (CUDA C Programming Guide), its fp32 ceiling in FLOPs halved to instructions and halved again for the lanes
INT_RATE_4090 = RTX_4090.ceiling_tflops("fp32") * 0.5 / 2 * 1e12
# Mistral-7B's layer matrices: Q and O 4096 x 4096, K and V 4096 x 1024, gate, up, down 4096 x 14336; 32 layers
MISTRAL_7B_LAYERS = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336)


def _decode(precision: str):
    plan = Plan(load_models().get("mistral-7b"), Generate(1, 64, 64), precision, runtime="vllm", batch=1)
    return next(p for p in estimate_gpu(plan, RTX_4090, FACTS).phases if p.name == "decode")


def test_vllm_awq_gemm_adds_the_tile_unpack_that_marlin_hides():
    """vLLM's AWQLinearMethod sends fewer than 256 tokens to ops.awq_gemm (AutoAWQ's m16n128k32 kernel): a decode
    step unpacks every layer weight once at 1.375 integer slots (5 integer + 12 half2 instructions per 8 weights),
    1.375 x 6.979e9 / 20.66e12 = 0.46 ms on a 4090, serial with its loads; the generic int4 preset (Marlin on vLLM)
    hides its unpack under the weight stream, so it has no such group."""
    awq, marlin = _decode("awq-gemm"), _decode("int4")
    unpack = next(g for g in awq.groups if g.name == "dequantize weights")
    assert unpack.time_s / awq.steps == pytest.approx(1.375 * MISTRAL_7B_LAYERS / INT_RATE_4090, rel=1e-9)
    assert unpack.time_s / awq.steps == pytest.approx(0.46e-3, rel=0.02)
    assert not any(g.name == "dequantize weights" for g in marlin.groups)
    assert awq.gpu_s / awq.steps - marlin.gpu_s / marlin.steps >= unpack.time_s / awq.steps


def test_round8_quantized_rows_take_the_preset_their_experiment_names():
    """optimum-benchmark's experiments 'bnb' (bitsandbytes 4-bit, no double quant), 'gptq' (exllama v1), 'awq' and
    'awq+gemm' (WQLinear_GEMM), 'awq+gemv' (WQLinear_GEMV); LitGPT's --quantize bnb.nf4-dq; premAI's vLLM 0.4.0 AWQ."""
    want = {"-bnb-": ("bnb-nf4", 4.5), "-gptq-": ("gptq-exllama", 4.16), "-awq-gemv-": ("awq-gemv", 4.16),
            "-awq-gemm-": ("awq-gemm", 4.16), "-awq-a100": ("awq-gemm", 4.16), "-nf4dq-": ("bnb-nf4-dq", 4.127),
            "-vllm-awq-": ("awq-gemm", 4.16)}
    prefixes = ("obm-", "obv-", "litgpt-tp-", "premai-")
    after = {k: v for k, v in conditions_read_after().items() if k.startswith(prefixes)}
    assert len(after) == 70 + 3 + 2
    for row_id, cond in after.items():
        (precision, bits), = {v for k, v in want.items() if k in row_id}
        assert (cond["precision"], cond["weight_bits"], cond["refines_assumed"]) == (precision, bits, True), row_id
