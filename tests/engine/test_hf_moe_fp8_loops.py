"""Hugging Face transformers' Python loops that the GPU waits on: the sparse MoE block's loop over every expert (a
torch.where sync per expert, data/runtimes.yaml pytorch-eager moe_expert_loop) and fine-grained FP8's FP8Linear (two
Triton launches and a torch.cuda.synchronize per call, data/precisions.yaml fp8-block-hf). Expected figures derived
by hand from the counts and costs those records quote (transformers 4.51.3's code; triton-lang/triton PR #3638;
jingyaogong/minimind PR #837; pytorch/pytorch #32194)."""

import pytest

from planner.base.schema import DataFileError
from planner.engine.estimate import estimate_gpu
from planner.engine.plan import Plan
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models
from planner.inputs.runtimes import load_runtimes
from planner.validation.measured import load_measurements, precision_for

FACTS = load_facts()
H200 = FACTS.catalog.get("h200-sxm")  # holds Mixtral-8x7B in bf16 (93 GB)
SYNC_US, IDLE_OP_US = 26.1, 3.4  # a device-to-host round trip; a dispatch that launches nothing
TRITON_LAUNCH_US, EAGER_US = 49.0, 36.0  # Triton 3.x's Python launch; pytorch-eager's prior per eager dispatch


def _decode(model: str, precision: str, runtime: str = "pytorch-eager", host_speed: float = 1.0):
    plan = Plan(load_models().get(model), Generate(1, 16, 65), precision, runtime=runtime, batch=1,
                host_speed=host_speed)
    e = estimate_gpu(plan, H200, FACTS)
    return next(p for p in e.phases if p.name == "decode"), e


def test_mixtral_decode_pays_a_sync_per_expert_and_idle_dispatches_on_the_six_unrouted():
    """Mixtral-8x7B at batch 1: 32 MoE layers x 8 experts = 256 torch.where syncs per step, and 32 x (8 - 2) = 192
    idle experts x 12 operators = 2,304 dispatches: 256 x 26.1 + 2,304 x 3.4 = 6,681.6 + 7,833.6 = 14,515.2 us a
    step, serial with everything else (the pass's time is its GPU time, the host's excess and this)."""
    decode, _ = _decode("mixtral-8x7b", "bf16")
    assert decode.host_syncs == pytest.approx(256)
    assert decode.idle_expert_ops == pytest.approx(2304)
    assert decode.host_wait_s / decode.steps == pytest.approx(14515.2e-6, rel=1e-9)
    assert decode.pass_s == pytest.approx(decode.gpu_s + decode.host_bound_s + decode.step_host_s
                                          + decode.host_wait_s, rel=1e-12)
    vllm, _ = _decode("mixtral-8x7b", "bf16", runtime="vllm")  # fused MoE: no loop
    assert vllm.host_wait_s == 0.0
    dense, _ = _decode("llama-3-8b", "bf16")  # no MoE layer: no loop
    assert dense.host_wait_s == 0.0


def test_expert_loop_is_host_time_and_scales_with_the_hosts_speed():
    """A host twice as fast single-threaded halves both the round trips' and the dispatches' host time."""
    base, _ = _decode("mixtral-8x7b", "bf16")
    fast, _ = _decode("mixtral-8x7b", "bf16", host_speed=2.0)
    assert fast.host_wait_s == pytest.approx(base.host_wait_s / 2, rel=1e-9)


def test_fp8_block_hf_costs_two_python_launches_a_call_and_the_sync_unhides_the_linears():
    """Llama-3-8B decode at batch 1 under FP8Linear: 32 layers x 7 linear modules = 224 calls a step, each one more
    launch (act_quant) and 2 x 49 / 36 - 1 = 1.72 eager dispatches of host time beyond nn.Linear's; after each
    call's torch.cuda.synchronize the host has waited for the matmul, so the linear layers' GPU time hides none of
    the host's dispatch: the host-bound wait is host - (GPU - linear layers), where the same checkpoint without the
    sync would wait host - GPU; and each synchronize is a round trip (26.1 us) the GPU waits on too."""
    kernel = FACTS.rules.precision("fp8-block-hf").kernel
    assert kernel.host_kernels_per_call == pytest.approx(2 * TRITON_LAUNCH_US / EAGER_US - 1, abs=0.005)
    assert kernel.synchronizes
    decode, e = _decode("llama-3-8b", "fp8-block-hf")
    linear = next(g for g in decode.groups if g.name == "linear layers")
    host_units = 224 * 1.72
    assert decode.synced_s == pytest.approx(linear.time_s, rel=1e-12)
    assert decode.host_bound_s == pytest.approx(max(0.0, decode.host_s - (decode.gpu_s - linear.time_s)), rel=1e-12)
    assert decode.host_bound_s > decode.host_s - decode.gpu_s  # the sync costs the linears' time
    bf16, _ = _decode("llama-3-8b", "bf16")
    extra_host = (decode.host_s - bf16.host_s) / decode.steps
    assert extra_host == pytest.approx(host_units * e.efficiency.host_us_per_kernel * 1e-6, rel=1e-9)
    assert decode.host_syncs == pytest.approx(224)  # one synchronize a call, serial: 224 x 26.1 us a step
    assert decode.host_wait_s / decode.steps == pytest.approx(224 * SYNC_US * 1e-6, rel=1e-9)
    assert bf16.host_wait_s == 0.0


def test_fp8_moe_idle_experts_still_run_fp8linear_launches_and_syncs():
    """Mixtral-8x7B under FP8Linear at batch 1: each of the 192 idle experts calls its 3 linear modules on an empty
    input: 576 calls, each 1.72 eager dispatches of Python launches (the grid is empty) and one synchronize; the
    352 calls that do run (32 layers x (Q, K, V, O, the router and 2 routed experts x 3)) synchronize too:
    256 + 576 + 352 = 1,184 round trips a step."""
    decode, _ = _decode("mixtral-8x7b", "fp8-block-hf")
    bf16, _ = _decode("mixtral-8x7b", "bf16")
    assert decode.host_syncs == pytest.approx(256 + 576 + 352)
    assert decode.idle_expert_ops == pytest.approx(2304)
    assert decode.host_wait_s / decode.steps == pytest.approx((1184 * SYNC_US + 2304 * IDLE_OP_US) * 1e-6, rel=1e-9)
    assert decode.host_wait_s > bf16.host_wait_s


def test_transformers_fp8_rows_run_the_fine_grained_format_and_other_runtimes_their_own():
    """An fp8 row under Hugging Face transformers is its FP8Linear checkpoint (fp8-block-hf); TensorRT-LLM's fp8
    stays the per-tensor preset."""
    rows = load_measurements()
    hf = next(r for r in rows if r.framework == "hf-transformers" and r.precision == "fp8")
    trt = next(r for r in rows if r.framework == "tensorrt-llm" and r.precision == "fp8")
    assert precision_for(hf, FACTS.rules)[0] == "fp8-block-hf"
    assert precision_for(trt, FACTS.rules)[0] == "fp8"


def test_an_expert_loop_needs_the_runtimes_round_trip_and_a_bad_one_names_its_field(tmp_path):
    """A runtime record whose MoE loop syncs per expert but gives no host_sync_us is refused, naming the record and
    the block; a negative idle-op cost names its field."""
    path = tmp_path / "r.yaml"
    base = ("schema_version: 1\nread_on: 2026-11-20\nruntimes:\n  - id: x\n    name: X\n"
            "    mem_bw_efficiency: {hbm: 0.8, gddr: 0.8}\n    compute_efficiency: {hbm: 0.7, gddr: 0.7}\n"
            "    launch_overhead_us: 1\n    kernels_per_layer_factor: 1\n    cuda_context_gb: 0.5\n    source: s\n"
            "    fuses_elementwise: false\n    fuses_elementwise_source: s\n")
    loop = "    moe_expert_loop: {idle_ops: 12, idle_op_us: %s, source: s}\n"
    path.write_text(base + loop % "3.4")
    with pytest.raises(DataFileError, match="'x'.*moe_expert_loop.*host_sync_us"):
        load_runtimes(path)
    path.write_text(base + loop % "-1" + "    host_sync_us: 26.1\n    host_sync_source: s\n")
    with pytest.raises(DataFileError, match="idle_op_us"):
        load_runtimes(path)
    path.write_text(base + loop % "3.4" + "    host_sync_us: 26.1\n    host_sync_source: s\n")
    eff = load_runtimes(path).get("x").efficiency("hbm")
    assert (eff.sync_us, eff.idle_op_us) == (26.1, 3.4)
