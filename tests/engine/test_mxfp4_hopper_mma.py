"""gpt-oss's MXFP4 experts under vLLM on Hopper: Marlin's warp-level mma.sync, not wgmma (data/precisions.yaml
mxfp4 mma_path, Precision.on_mma_path)."""

import pytest

from planner.engine.estimate import estimate_gpu, setup_on
from planner.engine.phases import generate_phases
from planner.engine.plan import Plan
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models
from planner.inputs.precisions import load_rules
from tests.fixtures.rules_file import load_error_for

FACTS = load_facts()
# gpt-oss-20b by hand (config.json): 24 layers; per layer q (2880 x 64 heads x 64) and o (4096 x 2880), k and v
# (2880 x 8 x 64), a router (2880 x 32 experts), 4 of 32 experts each gate_up (2880 x 5760) + down (2880 x 2880);
# the LM head 201,088 x 2880
EXPERTS = 24 * 4 * 3 * 2880 * 2880  # 2,388,787,200: the MXFP4 weights one token multiplies by
DENSE = 24 * (2 * 2880 * 4096 + 2 * 2880 * 512 + 2880 * 32)  # 639,221,760: attention projections and routers
HEAD = 201088 * 2880  # 579,133,440
MARLIN_ON_HOPPER = 0.65 / 0.96  # mma.sync 65 % of peak against wgmma's 96 % (arXiv:2501.12084, as the data cites it)


def _linear(gpu: str, runtime: str = "vllm"):
    plan = Plan(load_models().get("gpt-oss-20b"), Generate(1, 1, 2), "mxfp4", runtime=runtime, batch=1)
    s = setup_on(plan, FACTS.catalog.get(gpu), FACTS)
    decode = generate_phases(plan.model, Generate(1, 1, 2), s, 1, 1.0)[-1]
    return next(g for g in decode.groups if g.name == "linear layers")


def test_a_decode_step_on_an_h100_under_vllm_runs_its_experts_share_at_the_mma_sync_rate():
    """A batch-1 decode step multiplies every weight once per token: q = 2.3888e9 / (2.3888e9 + 0.6392e9 +
    0.5791e9) = 0.6622 of the linear FLOPs are on MXFP4 experts, at 0.65 / 0.96 = 0.677 of the ceiling (0.68 in
    the data), the rest at it: the group's rate factor 1 / (0.6622 / 0.677 + 0.3378) = 0.760 (0.7624 at 0.68)."""
    q = EXPERTS / (EXPERTS + DENSE + HEAD)
    assert q == pytest.approx(0.6622, abs=1e-4)
    expected = 1 / (q / MARLIN_ON_HOPPER + 1 - q)
    assert expected == pytest.approx(0.760, abs=1e-3)
    g = _linear("h100-sxm")
    assert g.flops == pytest.approx(2 * (EXPERTS + DENSE + HEAD), rel=1e-6)
    assert g.rate_factor == pytest.approx(1 / (q / 0.68 + 1 - q), rel=1e-9)  # the data's rounded 0.68
    assert g.rate_factor == pytest.approx(expected, rel=0.01)
    assert "66% of these FLOPs (the experts') at 0.68 of the matmul ceiling" in g.formula


def test_ampere_and_other_runtimes_keep_the_ceiling():
    """Marlin is the A100's native mma.sync path (its ceiling), and TensorRT-LLM runs its own kernels on Hopper."""
    assert _linear("a100-sxm-80gb").rate_factor == 1.0
    assert _linear("h100-sxm", "tensorrt-llm").rate_factor == 1.0


def test_the_path_covers_hopper_under_vllm_only():
    mxfp4 = load_rules().precision("mxfp4")
    on_h100 = mxfp4.on_mma_path((9, 0), "vllm")
    assert on_h100.mma_fraction == 0.68 and on_h100.mma_path is None and "mma.sync" in on_h100.runs_as
    for cc, runtime in (((8, 0), "vllm"), ((10, 0), "vllm"), ((9, 0), "tensorrt-llm"), (None, "vllm")):
        assert mxfp4.on_mma_path(cc, runtime) is mxfp4
    assert load_rules().precision("bf16").on_mma_path((9, 0), "vllm").mma_fraction == 1.0


def test_the_rate_is_the_time_weighted_mean():
    """Half the FLOPs at half the rate take as long as the other half twice: 1 / (0.5 / 0.5 + 0.5) = 2/3."""
    p = load_rules().precision("mxfp4").on_mma_path((9, 0), "vllm")
    half = type(p)(**{**p.__dict__, "mma_fraction": 0.5})
    assert half.quantized_rate(0.5) == pytest.approx(2 / 3)
    assert half.quantized_rate(0.0) == 1.0 and half.quantized_rate(1.0) == pytest.approx(0.5)


@pytest.mark.parametrize("block, field", [
    ("{runtimes: [vllm], min_sm: '9.0', max_sm: '8.0', fraction: 0.5, kernel_name: k, source: s}", "max_sm"),
    ("{runtimes: [vllm], min_sm: '9.0', max_sm: '9.0', fraction: 1.5, kernel_name: k, source: s}", "fraction"),
    ("{runtimes: [vllm], min_sm: '9.0', max_sm: '9.0', fraction: 0.5, kernel_name: k}", "source"),
])
def test_a_bad_mma_path_block_names_its_field(tmp_path, block, field):
    err = load_error_for(tmp_path, "mma_path", block)
    assert err.field == field and "mma_path" in err.record


def test_the_estimate_says_which_kernel_runs_the_experts():
    plan = Plan(load_models().get("gpt-oss-20b"), Generate(1, 64, 16), "mxfp4", runtime="vllm", batch=1)
    e = estimate_gpu(plan, FACTS.catalog.get("h100-sxm"), FACTS)
    notes = [r.text for r in e.reasons if r.code == "precision" and not r.blocking]
    assert any("Marlin MXFP4 MoE (warp-level mma.sync) under vllm at 0.68 of the matmul ceiling" in t for t in notes)
    e = estimate_gpu(plan, FACTS.catalog.get("a100-sxm-80gb"), FACTS)
    assert not any("mma.sync" in r.text for r in e.reasons)
