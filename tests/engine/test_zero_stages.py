"""ZeRO stages 1-3 and sharding auto: memory per GPU and collective bytes per step by the ZeRO paper's formulas
(Rajbhandari et al. 2020, https://arxiv.org/abs/1910.02054, sec. 5 and 7, Figure 1), derived by hand."""

from dataclasses import replace

import pytest

from planner.base.units import BYTES_PER_GB
from planner.engine.estimate import estimate_all, estimate_gpu
from planner.engine.memory import breakdown
from planner.engine.phases import train_phases
from planner.engine.plan import Plan, check_plan
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Train
from planner.inputs.models import load_models
from planner.inputs.precisions import load_rules
from planner.inputs.work import Setup

FACTS = load_facts()
LLAMA = load_models().get("llama-2-7b")
PSI = LLAMA.params  # the paper's Psi: the model's parameter count
N = 8


def _setup(stage: int, precision="bf16"):
    r = load_rules()
    p = r.precision(precision)
    s = Setup(p, r.default_kv_dtype(p), r.attention("sdpa"))
    if stage == 3:
        return replace(s, shard=N)
    return replace(s, zero_stage=stage, zero_gpus=N) if stage else s


def _states_gb(stage: int, precision="bf16") -> float:
    """Weights + gradients + optimizer states per GPU (what the paper's Figure 1 counts), decimal GB."""
    mem = breakdown(LLAMA, Train(64, 2048, 1, "adamw"), _setup(stage, precision), 1, 0.0)
    return mem.get("weights") + mem.get("gradients") + mem.get("optimizer")


def test_the_papers_figure_1_per_stage_for_a_7b_model_on_8_gpus_in_bf16_adamw():
    # mixed precision Adam: 2 B 16-bit weights + 2 B 16-bit gradients + K = 12 B (fp32 master, m, v) per parameter
    assert _states_gb(1) == pytest.approx((2 + 2 + 12 / N) * PSI / 1e9)  # P_os: 5.5 x Psi = 37.1 GB
    assert _states_gb(2) == pytest.approx((2 + (2 + 12) / N) * PSI / 1e9)  # P_os+g: 3.75 x Psi = 25.3 GB
    assert _states_gb(1) == pytest.approx(37.06, abs=0.01) and _states_gb(2) == pytest.approx(25.27, abs=0.01)
    # ZeRO-3 (FSDP as PyTorch keeps it: fp32 weights, gradients and 8 B of Adam states, all / N = 16 Psi / N, the
    # paper's (2 + 2 + 12) / N) plus the two layers gathered in bf16 while they compute
    unit = LLAMA.shard_unit_params
    assert _states_gb(3) == pytest.approx((16 * PSI / N + 2 * unit * 2) / 1e9)
    # DDP as PyTorch autocast runs it: fp32 weights 4 + their bf16 copy 2 + fp32 gradients 4 + Adam 8 = 18 B
    assert _states_gb(0) == pytest.approx(18 * PSI / 1e9)


def test_fp32_training_keeps_no_master_copy_under_zero():
    # fp32 weights and gradients (4 B each), Adam's 8 B partitioned: 4 + 4 + 8 / N (stage 1), 4 + 12 / N (stage 2)
    assert _states_gb(1, "fp32") == pytest.approx((4 + 4 + 8 / N) * PSI / 1e9)
    assert _states_gb(2, "fp32") == pytest.approx((4 + 12 / N) * PSI / 1e9)


def _comm(sharding: str, grad_accum=1) -> tuple[float, float]:
    """(bytes each GPU sends per micro-step, averaged over an optimizer step's micro-steps, per optimizer step) of
    llama-2-7b on 8 GPUs in bf16 (ZeRO-1's step's last micro-step is a phase of its own)."""
    stage = {"ddp": 0, "zero1": 1, "zero2": 2, "fsdp": 3}[sharding]
    w = Train(64, 2048, 1, grad_accum=grad_accum, sharding=sharding)
    phases = train_phases(LLAMA, w, _setup(stage), 1, 1.0, N)  # one micro-step's worth of passes
    (opt,) = [p for p in phases if p.name == "optimizer step"]
    micro = sum(p.comm_bytes * p.passes for p in phases if p.name.startswith("train micro-step"))
    return micro, opt.comm_bytes


def test_collective_bytes_per_step_per_stage():
    ring = (N - 1) / N  # each GPU's share of a ring reduce-scatter or all-gather
    # ZeRO-1/2: reduce-scatter the bf16 gradients (in the backward) + all-gather the bf16 weights (after the step)
    for stage in ("zero1", "zero2"):
        assert _comm(stage) == pytest.approx((ring * 2 * PSI, ring * 2 * PSI))
    # ZeRO-3: two all-gathers and a reduce-scatter of bf16 per micro-step: 1.5x ZeRO-1/2's total (the paper's 1.5x)
    fsdp_micro, fsdp_step = _comm("fsdp")
    assert fsdp_step == 0 and fsdp_micro == pytest.approx(3 * ring * 2 * PSI)
    assert fsdp_micro / sum(_comm("zero2")) == pytest.approx(1.5)
    # DDP (PyTorch autocast): an all-reduce of the fp32 gradients, 2 (N-1)/N x 4 B x Psi
    assert _comm("ddp") == pytest.approx((2 * ring * 4 * PSI, 0.0))


def test_stage_1_reduces_once_per_optimizer_step_stage_2_every_micro_step():
    ring = (N - 1) / N
    assert _comm("zero1", grad_accum=4)[0] == pytest.approx(ring * 2 * PSI / 4)  # once in the 4 micro-steps
    w = Train(64, 2048, 1, grad_accum=4, sharding="zero1")
    edge, _, micro = train_phases(LLAMA, w, _setup(1), 1, 1.0, N)
    assert (edge.passes, micro.passes) == (0.25, 0.75) and edge.comm_bytes == pytest.approx(ring * 2 * PSI)
    assert _comm("zero2", grad_accum=4)[0] == pytest.approx(ring * 2 * PSI)


def test_zero_updates_only_its_partition():
    # AdamW's 28 B/param of traffic + the updated 2 B bf16 copy, on PSI / N parameters
    _, opt = train_phases(LLAMA, Train(64, 2048, 1, sharding="zero1"), _setup(1), 1, 1.0, N)  # accum 1: no plain
    assert opt.groups[0].bytes == pytest.approx((28 + 2) * PSI / N)


def _plan(sharding: str, gpus=N, model=LLAMA) -> Plan:
    return Plan(model, Train(10_000, 2048, 1, sharding=sharding), "bf16", gpus=gpus)


def test_auto_picks_the_cheapest_layout_that_fits_and_says_why():
    gpu = FACTS.catalog.get("a100-sxm-80gb")
    each = {sh: estimate_gpu(_plan(sh), gpu, FACTS) for sh in ("ddp", "zero1", "zero2", "fsdp")}
    # DDP's 18 B/param = 121 GB of states per GPU cannot fit 80 GB
    assert not each["ddp"].feasible and each["ddp"].memory.get("weights") > 40
    auto = estimate_gpu(_plan("auto"), gpu, FACTS)
    assert auto.feasible and auto.plan.workload.sharding == "auto"
    fits = [e for e in each.values() if e.feasible]
    assert auto.cost() == min(e.cost() for e in fits)
    picked = next(sh for sh, e in each.items() if e.feasible and e.cost() == auto.cost())
    assert auto.parallelism == picked and auto.seconds == each[picked].seconds
    why = auto.reasons[0].text
    assert why.startswith(f"sharding auto: {picked} (") and "did not fit: ddp (" in why
    for sh in ("zero1", "zero2", "fsdp"):
        if sh != picked:
            assert f"{sh} ($" in why.split("fit but cost more:")[1]


def test_auto_in_the_sweep_is_each_gpus_own_pick():
    plan = _plan("auto")
    for e in estimate_all(plan, FACTS, ["h100-sxm", "rtx-4090"]):
        assert e.parallelism == estimate_gpu(plan, e.gpu, FACTS).parallelism
        assert e.reasons[0].text.startswith("sharding auto:")


def test_auto_on_one_gpu_is_plain_single_gpu_training():
    gpu = FACTS.catalog.get("h100-sxm")
    small = load_models().get("gpt2-124m")
    auto, ddp = estimate_gpu(_plan("auto", 1, small), gpu, FACTS), estimate_gpu(_plan("ddp", 1, small), gpu, FACTS)
    assert auto.parallelism == "single" and auto.seconds == ddp.seconds


@pytest.mark.parametrize("sharding", ["zero1", "zero2"])
def test_zero_on_one_gpu_is_refused_naming_the_field(sharding):
    with pytest.raises(ValueError, match=f"sharding {sharding} partitions .* GPUs per job to 2 or more"):
        check_plan(_plan(sharding, gpus=1))


def test_an_unknown_stage_is_refused_naming_the_field():
    with pytest.raises(ValueError, match="sharding must be one of ddp, zero1, zero2, fsdp, auto .got 'zero4'"):
        check_plan(_plan("zero4"))


def test_memory_items_say_their_formula():
    mem = breakdown(LLAMA, Train(64, 2048, 1), _setup(2), 1, 0.0)
    opt = next(i for i in mem.items if i.name == "optimizer")
    assert "/ 8 GPUs (ZeRO-2 partition)" in opt.formula and opt.gb == pytest.approx(12 * PSI / N / BYTES_PER_GB)


def test_a_layout_that_does_not_fit_points_to_the_higher_stages():
    # Llama-3-70B on 8 x 80 GB under ZeRO-1: 4 B/param of bf16 weights and gradients alone are 280 GB per GPU
    big = load_models().get("llama-3-70b")
    e = estimate_gpu(_plan("zero1", model=big), FACTS.catalog.get("a100-sxm-80gb"), FACTS)
    assert not e.feasible and e.memory.get("weights") + e.memory.get("gradients") > 4 * big.params / 1e9 * 0.999
    assert any("a higher ZeRO stage" in r.text for r in e.reasons)


def test_with_no_layout_fitting_auto_shows_the_one_needing_the_least_memory():
    # Llama-3-70B on 8 x A100 40GB: even ZeRO-3's 16 B/param / 8 = 141 GB per GPU cannot fit
    big, gpu = load_models().get("llama-3-70b"), FACTS.catalog.get("a100-sxm-40gb")
    each = {sh: estimate_gpu(_plan(sh, model=big), gpu, FACTS) for sh in ("ddp", "zero1", "zero2", "fsdp")}
    least = min(each, key=lambda sh: each[sh].memory.total_gb)
    auto = estimate_gpu(_plan("auto", model=big), gpu, FACTS)
    assert not auto.feasible and auto.parallelism == least == "fsdp"
    assert auto.reasons[0].text.startswith("sharding auto: no layout runs here; fsdp")
