"""Communication a training stack hides under compute beyond its data-parallel gradients (Training.comm_overlap):
TP's userbuffers chunks, CP's K/V ring, the interleaved schedule's P2P sends and the distributed optimizer's
parameter gather, each share derived by hand from the schedule NeMo documents (communication_overlap.rst) and
Megatron-Core's interleaved warm-up count (schedules.py), on a made-up plan."""

from dataclasses import replace

import pytest

from planner.engine.estimate import estimate_gpu
from planner.engine.plan import Plan
from planner.engine.roofline import OVERLAP_COMPUTE_SLOWDOWN
from planner.engine.train_layout import cp_hidden_share, pp_hidden_share, pp_warmup_chunks, tp_hidden_share
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Train
from planner.inputs.layouts import Layout
from planner.inputs.models import load_models
from planner.inputs.precisions import load_rules
from planner.inputs.runtimes import with_training
from planner.inputs.work import Setup

ALL = ("tp", "cp", "pp-interleaved", "param-gather")
SLOW = OVERLAP_COMPUTE_SLOWDOWN / (1 + OVERLAP_COMPUTE_SLOWDOWN)  # the compute a hidden second pushes out


def _setup(**kw) -> Setup:
    r = load_rules()
    p = r.precision("bf16")
    return replace(Setup(p, r.default_kv_dtype(p), r.attention("sdpa")), **({"comm_overlap": ALL} | kw))


def test_interleaved_warmup_is_megatron_cores_count():
    # first stage: (p - 1) x 2 + (v - 1) x p chunk-steps; 70B's TP 4 x PP 4 x VP 5 at 64 micro-batches: 6 + 16 = 22
    assert pp_warmup_chunks(4, 5, 64) == 22
    assert pp_hidden_share(_setup(pp=4, vpp=5), 64) == pytest.approx(1 - 22 / 320)
    # 405B's PP 9 x VP 7: 16 + 54 = 70 of 63 x 7 chunk-steps at 63 micro-batches
    assert pp_hidden_share(_setup(pp=9, vpp=7), 63) == pytest.approx(1 - 70 / 441)
    # fewer micro-batches than the warm-up: every chunk-step is warm-up or cool-down, nothing hides
    assert pp_warmup_chunks(8, 2, 2) == 4
    assert pp_hidden_share(_setup(pp=8, vpp=2), 2) == 0.0


def test_each_overlap_needs_its_mechanism_and_its_runtime():
    assert pp_hidden_share(_setup(pp=4, vpp=1), 64) == 0.0  # NeMo overlaps P2P with virtual stages only
    assert pp_hidden_share(_setup(pp=4, vpp=5, comm_overlap=()), 64) == 0.0
    assert tp_hidden_share(_setup(tp=4)) == pytest.approx(3 / 4)  # one reduce-scatter chunk of 4 exposed
    assert tp_hidden_share(_setup(tp=8)) == pytest.approx(7 / 8)
    assert tp_hidden_share(_setup(tp=1)) == 0.0
    assert tp_hidden_share(_setup(tp=4, comm_overlap=("cp",))) == 0.0
    assert cp_hidden_share(_setup(cp=2)) == 1.0
    assert cp_hidden_share(_setup(cp=2, comm_overlap=("tp",))) == 0.0


def _phases(facts, plan, gpu):
    return {p.name.split(" (")[0]: p for p in estimate_gpu(plan, gpu, facts).phases}


def test_a_made_up_megatron_plan_hides_each_share_and_pays_contention():
    # Llama 3 8B, TP 2 x PP 2 x VP 2 x CP 2 x DP 2 on 16 H100s, sequence 8192, micro-batch 1, 32 micro-batches
    facts = load_facts()
    model = load_models().get("llama-3-8b")
    job = Train(64, 8192, 1.0, sharding="zero1", layout=Layout(tp=2, pp=2, cp=2, vpp=2), global_batch=64)
    plan = Plan(model, job, "bf16", None, "sdpa-flash", "megatron-lm", 1, 16)
    gpu = facts.catalog.get("h100-sxm")
    on = _phases(facts, plan, gpu)
    off = _phases(replace(facts, runtimes=with_training(facts.runtimes, "megatron-lm", comm_overlap=())), plan, gpu)
    shares = {"tensor-parallel collectives": 1 / 2, "context-parallel K/V exchange": 1.0,
              # p = 2, v = 2, m = 32: warm-up (2 - 1) x 2 + (2 - 1) x 2 = 4 of 64 chunk-steps
              "pipeline sends": 1 - 4 / 64}
    for name, share in shares.items():
        total = off[name].comm_s  # nothing hidden without the overlap
        assert off[name].comm_hidden_s == 0.0
        assert on[name].comm_hidden_s == pytest.approx(share * total, rel=1e-9), name
        assert on[name].comm_s == pytest.approx((1 - share) * total, rel=1e-9), name
        assert on[name].contention_s == pytest.approx(share * total * SLOW, rel=1e-9), name
    # the micro-step itself (its GEMMs and attention) is timed as before
    assert on["train micro-step"].total_s == pytest.approx(off["train micro-step"].total_s, rel=1e-12)
    # the parameter gather leaves the optimizer step for the step's collectives' micro-step (overlap_param_gather)
    assert off["optimizer step"].comm_s > 0 and on["optimizer step"].comm_s == 0.0
    edge = "train micro-step with the step's data-parallel collectives"
    gather = off["optimizer step"].comm_s
    assert on[edge].comm_s + on[edge].comm_hidden_s == pytest.approx(
        off[edge].comm_s + off[edge].comm_hidden_s + gather, rel=1e-9)


def test_zero1_reduces_once_a_step_under_one_micro_steps_compute():
    # Llama 3 8B, DP 8 over one node's NVLink, ZeRO-1, 4 micro-batches a step: the gradients' reduce-scatter runs in
    # the last micro-step's backward only, so its phase runs once a step beside three micro-steps without it
    facts = load_facts()
    model = load_models().get("llama-3-8b")
    job = Train(64, 4096, 1.0, sharding="zero1", global_batch=32)
    plan = Plan(model, job, "bf16", None, "sdpa-flash", "megatron-lm", 1, 8)
    e = estimate_gpu(plan, facts.catalog.get("h100-sxm"), facts)
    phases = {p.name: p for p in e.phases}
    edge = phases["train micro-step with the step's data-parallel collectives"]
    micro = phases["train micro-step"]
    assert micro.passes == pytest.approx(3 * edge.passes)
    assert micro.comm_s == 0.0 and micro.comm_hidden_s == 0.0
    # the whole step's reduce-scatter (and the overlapped parameter gather) in one micro-step: 7/8 x 8.03e9 params
    # x 2 B each, bf16 gradients and weights, 7 ring steps each
    sent = 2 * 7 / 8 * model.params * 2
    assert sum(c[0] for c in edge_comm(e)) == pytest.approx(sent, rel=1e-9)


def edge_comm(e):
    """The comm of the estimate's data-parallel micro-step Phase (bytes sent, ring steps, calls per collective)."""
    (ph,) = [p for p, _ in e.passes if p.name.startswith("train micro-step with")]
    return ph.comm
