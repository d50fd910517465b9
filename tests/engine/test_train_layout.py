"""Training layouts (tensor + sequence, pipeline, context parallel): the bubble, memory per GPU, collective bytes and
the links they run over, each derived by hand from the papers' formulas (Narayanan et al. 2021, Megatron-LM SC21,
https://arxiv.org/abs/2104.04473; Korthikanti et al. 2022, https://arxiv.org/abs/2205.05198)."""

from dataclasses import replace

import pytest

from planner.engine.collectives import group_link
from planner.engine.estimate import estimate_gpu, estimate_many
from planner.engine.memory import breakdown
from planner.engine.phases import job_passes
from planner.engine.plan import Plan, check_plan
from planner.engine.train_layout import activations_in_flight, bubble_fraction, layout_candidates
from planner.engine.utilization import model_flops
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Train
from planner.inputs.layouts import Layout, parse_layout
from planner.inputs.models import load_models
from planner.inputs.precisions import load_rules
from planner.inputs.work import Setup

FACTS = load_facts()
H100 = FACTS.catalog.get("h100-sxm")
LLAMA = load_models().get("llama-2-7b")  # 32 layers, hidden 4096, 32 heads and KV heads of 128
PSI = LLAMA.params
MIB = 2**20


def _setup(**split) -> Setup:
    r = load_rules()
    p = r.precision("bf16")
    return replace(Setup(p, r.default_kv_dtype(p), r.attention("sdpa")), **split)


def _plan(layout: str, gpus: int, batch: int | None = 1, size: int = 2048, **train) -> Plan:
    w = Train(train.pop("samples", 64), size, 1.0, "adamw", layout=parse_layout(layout), **train)
    return Plan(LLAMA, w, "bf16", batch=batch, gpus=gpus)


def _phase(e, start: str):
    """The estimate's phase (the whole job's, timed) whose name starts so."""
    return next(ph for ph in e.phases if ph.name.startswith(start))


def _work(layout: str, dp: int = 1, size: int = 2048, **train):
    """One micro-step's phases under a layout (no memory check), as a dict by name prefix."""
    lay = parse_layout(layout)
    w = Train(64, size, 1.0, "adamw", layout=lay, **train)
    s = _setup(tp=lay.tp, pp=lay.pp, cp=lay.cp, vpp=lay.vpp)
    return {ph.name.split(" (")[0]: ph for ph, _ in job_passes(LLAMA, w, s, 1, 64, dp)}


def test_the_1f1b_bubble_is_p_minus_1_over_m_plus_p_minus_1_and_interleaving_divides_it_by_v():
    assert bubble_fraction(4, 8) == pytest.approx(3 / 11)  # (p-1)/(m+p-1), Narayanan et al. sec. 2.2.1
    assert bubble_fraction(4, 8, 2) == pytest.approx(1.5 / 9.5)  # ((p-1)/v) / (m + (p-1)/v), sec. 2.2.2
    assert bubble_fraction(1, 8) == 0.0


def test_an_estimate_idles_p_minus_1_micro_steps_per_optimizer_step():
    # 4 stages on 4 GPUs (no data parallel, no TP: the bubble repeats the micro-step exactly), 8 micro-batches per
    # optimizer step: the stage idles (p-1)/m = 3/8 of its micro-steps' time, 3/11 of the step
    e = estimate_gpu(_plan("pp=4", 4, grad_accum=8), H100, FACTS)
    assert e.feasible
    micro, idle = _phase(e, "train micro-step"), _phase(e, "pipeline bubble")
    assert idle.total_s / micro.total_s == pytest.approx(3 / 8)
    assert idle.total_s / (idle.total_s + micro.total_s) == pytest.approx(3 / 11)
    interleaved = estimate_gpu(_plan("pp=4,v=2", 4, grad_accum=8), H100, FACTS)
    assert _phase(interleaved, "pipeline bubble").total_s == pytest.approx(idle.total_s / 2, rel=0.02)


def test_tp_times_pp_divides_the_training_states_and_tp_times_cp_the_activations():
    whole = breakdown(LLAMA, Train(64, 2048, 1.0), _setup(), 1, 0.0)
    split = breakdown(LLAMA, Train(64, 2048, 1.0), _setup(tp=2, pp=2), 1, 0.0)
    # bf16 autocast DDP: fp32 master 4 B + bf16 copy 2 B, fp32 gradient 4 B, Adam 8 B per parameter, / (tp x pp)
    assert split.get("weights") == pytest.approx(PSI * 6 / 4 / 1e9)  # 10.1 GB
    assert split.get("gradients") == pytest.approx(PSI * 4 / 4 / 1e9)
    assert split.get("optimizer") == pytest.approx(PSI * 8 / 4 / 1e9)
    # sequence parallel splits every activation over tp; 1F1B's first stage holds p micro-batches of L/p layers:
    # one whole-model micro-batch's worth of the layers' activations; the logits (fp32 and their gradient, 8 B x
    # 32,000 a token) live on the last stage, which holds less (L/p layers + logits: 2.46 + 0.26 MB a token < 4.92)
    logits = 2048 * 8 * 32_000 / 1e9
    assert split.get("activations") == pytest.approx((whole.get("activations") - logits) / 2)
    # interleaved: 1 + (p-1)/(p v) = 1 + 1/4 micro-batches in flight (Korthikanti et al. sec. 4.2.3); CP splits the
    # sequence
    assert activations_in_flight(2, 2) == pytest.approx(1.25)
    inter = breakdown(LLAMA, Train(64, 2048, 1.0), _setup(tp=2, pp=2, vpp=2, cp=2), 1, 0.0)
    assert inter.get("activations") == pytest.approx((whole.get("activations") - logits) * 1.25 / 4)


def test_fsdp_over_the_data_parallel_ranks_shards_each_stages_share():
    # 16 GPUs as tp 2 x pp 2 x dp 4, FSDP over the 4: fp32 weights, gradients and Adam = 16 B x Psi / (4 x 4) + the
    # two gathered layers' bf16 weights, whole layers split over tp only
    e = estimate_gpu(_plan("tp=2,pp=2", 16, sharding="fsdp"), H100, FACTS)
    states = e.memory.get("weights") + e.memory.get("gradients") + e.memory.get("optimizer")
    assert states == pytest.approx((16 * PSI / 16 + 2 * LLAMA.shard_unit_params * 2 / 2) / 1e9)
    assert e.data_ranks == 4 and e.parallelism == "fsdp with tp=2,pp=2"


def test_a_tp_all_reduce_moves_2_t_minus_1_over_t_of_the_hidden_states():
    # micro-batch 1 x 2,048 tokens x hidden 4,096 x 2 B = 16 MiB per all-reduce; per layer 2 in forward, 2 in
    # backward: 4 x 32 = 128 all-reduces, each 2(t-1)/t x 16 MiB = 16 MiB per GPU at t = 2: 2 GiB per micro-step,
    # run as 256 reduce-scatters and all-gathers (sequence parallel) of one ring step each
    tp = _work("tp=2")["tensor-parallel collectives"]
    assert tp.comm == ((pytest.approx(2 * 1024 * MIB), pytest.approx(256), pytest.approx(256)),)
    assert tp.comm_gpus == 2 and not tp.comm_overlaps
    ckpt = _work("tp=2", checkpointing=True)["tensor-parallel collectives"]
    assert ckpt.comm_bytes == pytest.approx(3 * 1024 * MIB)  # + the recomputed forward


def test_pipeline_sends_and_the_context_parallel_ring_by_hand():
    # PP: one message of b x S / (tp x cp) x h x 2 B = 2,048 / 2 x 4,096 x 2 = 8 MiB forward and one backward per
    # micro-batch, per virtual stage
    sends = _work("tp=2,pp=2,v=2", dp=2)["pipeline sends"]
    assert sends.comm == ((pytest.approx(4 * 8 * MIB), 4.0, 4.0),)
    assert sends.comm_gpus == 2 and sends.comm_stride == 4  # neighbours tp x cp x dp = 2 x 1 x 2 ranks apart
    # CP 2 at 4,096 tokens: each layer gathers the other rank's K and V, 4,096 x (2 x 4,096) x 2 B = 64 MiB, half of it
    # sent per GPU; forward once, backward twice (K, V again and their gradients): 3 x 32 x 32 MiB = 3 GiB
    ring = _work("cp=2", size=4096)["context-parallel K/V exchange"]
    assert ring.comm_bytes == pytest.approx(3 * 1024 * MIB) and ring.comm_gpus == 2


def test_a_data_parallel_group_beside_tp_8_crosses_the_network_on_one_nic_per_gpu():
    # dp 4 at stride 8 on 8-GPU H100 nodes: one member per node, each ring step over one 400 Gb/s NIC x 0.96 bus
    link = group_link(H100, 4, 8)
    assert link.nodes == 4 and link.describe().startswith("4 nodes, 1 of the group's GPUs in each")
    simple = next(r for r in link.rates if r.id == "simple")
    assert simple.bytes_per_s == pytest.approx(400 / 8 * 0.96 * 1e9)
    # the same 4 GPUs side by side share one node's NVLink
    assert group_link(H100, 4, 1) is H100.link_for(4)


def test_mfu_counts_the_whole_models_flops_under_tensor_parallel():
    one = estimate_gpu(_plan("", 2), H100, FACTS)
    tp = estimate_gpu(_plan("tp=2", 2), H100, FACTS)
    # 3 x forward x samples; the forward of a 2,048-token sample of a 6.74B model is ~2 x 6.74e9 x 2,048 FLOPs
    assert model_flops(tp) == pytest.approx(model_flops(one))
    assert model_flops(tp) / 64 / 3 == pytest.approx(2 * PSI * 2048, rel=0.15)


@pytest.mark.parametrize("layout, gpus, kw, words", [
    ("tp=2,pp=4", 12, {}, "layout: tp 2 x pp 4 x cp 1 = 8 GPUs per model copy does not divide the 12 GPUs"),
    ("pp=3", 3, {}, "do not divide llama-2-7b's 32 layers"),
    ("tp=3", 3, {}, "tp=3 does not divide"),
    ("v=2", 2, {}, "needs pp=2 or more"),
    ("cp=4", 4, {"size": 2044}, "not a multiple of 8"),
    ("tp=2", 4, {"global_batch": 4, "batch": 4}, "batch: micro-batch 4 x 2 data-parallel rank(s) = 8 is above the "
     "global batch 4"),
    ("tp=2", 4, {"global_batch": 6, "batch": 2}, "global batch 6 is not a multiple of micro-batch 2 x 2"),
    ("tp=4", 4, {"sharding": "zero1"}, "leaves 1"),
])
def test_a_layout_that_cannot_run_is_refused_naming_the_field(layout, gpus, kw, words):
    batch = kw.pop("batch", 1)
    size = kw.pop("size", 2048)
    with pytest.raises(ValueError, match=None) as exc:
        check_plan(_plan(layout, gpus, batch=batch, size=size, **kw))
    assert words.replace("llama-2-7b", LLAMA.name) in str(exc.value)


def test_tensor_parallel_beyond_a_node_is_refused_on_that_gpu():
    e = estimate_gpu(_plan("tp=16", 16), H100, FACTS)
    assert not e.feasible and any("tp=16 is more than the 8 GPUs" in r.text for r in e.reasons)


def test_layout_auto_picks_a_layout_that_fits_when_no_data_parallel_layout_does():
    # Llama-3-70B (70.6e9 parameters) on 16 H100s: FSDP over all 16 holds 16 B x 70.6e9 / 16 = 70.6 GB of states,
    # plus two gathered layers (3.4 GB) and, checkpointed, every layer's input: 80 x 4,096 x 8,192 x 2 B = 5.4 GB:
    # past the 77 GB usable. Splitting the model over tp x pp leaves the data-parallel ranks less to shard.
    m = load_models().get("llama-3-70b")
    states = 16 * m.params / 16 + 2 * m.shard_unit_params * 2 + 80 * 4096 * 8192 * 2
    assert states / 1e9 > 0.9 * H100.reported_vram_gb
    plan = Plan(m, Train(64, 4096, 1.0, checkpointing=True, layout=Layout(auto=True), sharding="auto"), "bf16",
                gpus=16)
    e = estimate_gpu(plan, H100, FACTS)
    assert e.feasible and e.setup.tp * e.setup.pp * e.setup.cp > 1
    assert e.reasons[0].text.startswith("layout auto: ") and "is the cheapest layout that fits" in e.reasons[0].text
    assert e.memory.total_gb <= e.usable_gb


def test_layout_candidates_respect_the_gpus_layers_and_heads():
    cands = layout_candidates(LLAMA, 2048, 8)
    assert Layout() in cands and Layout(tp=8) in cands and Layout(tp=2, pp=4, vpp=2) in cands
    assert all(8 % c.model_parallel == 0 and 32 % (c.pp * c.vpp) == 0 for c in cands)
    assert all(c.cp == 1 for c in cands)  # 2,048 tokens: no context parallel
    assert any(c.cp == 2 for c in layout_candidates(LLAMA, 32768, 8))


def test_a_global_batch_sets_the_micro_batches_per_step():
    # 256 samples per step over 2 data-parallel ranks (tp 2 x pp 2 on 8 GPUs) at micro-batch 4: 256 / (4 x 2) = 32
    e = estimate_gpu(_plan("tp=2,pp=2", 8, batch=4, global_batch=256, samples=1024), H100, FACTS)
    w = e.plan.workload
    assert w.accum_for(4, e.data_ranks) == 32
    micro = _phase(e, "train micro-step")
    assert _phase(e, "optimizer step").passes == pytest.approx(micro.passes / 32)  # 1,024 / 256 = 4 steps
    assert _phase(e, "optimizer step").passes == pytest.approx(4)


@pytest.mark.parametrize("layout, sharding, global_batch", [("tp=2,pp=2,v=2", "zero1", 64), ("auto", "auto", 0)])
def test_the_sweep_equals_one_gpus_estimate_under_a_layout(layout, sharding, global_batch):
    plan = _plan(layout, 8, batch=None, size=4096, samples=512, sharding=sharding, global_batch=global_batch)
    gpus = [FACTS.catalog.get(g) for g in ("h100-sxm", "a100-sxm-80gb", "rtx-4090", "mi300x")]
    for swept, gpu in zip(estimate_many(plan, gpus, FACTS), gpus):
        one = estimate_gpu(plan, gpu, FACTS)
        assert (swept.feasible, swept.batch, swept.seconds, swept.parallelism) == (
            one.feasible, one.batch, one.seconds, one.parallelism)
