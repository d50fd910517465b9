"""The rearranging copies of a batch-first stack's sequence-parallel collectives (PyTorch DTensor's Shard(1) on
[batch, seq, hidden]: torch 2.13's all_gather_single re-concatenates along dim 1 unless dim 0 holds one row per rank,
reduce_scatter_single always concatenates the dim-1 chunks first), counted by hand."""

from dataclasses import replace

import pytest

from planner.engine.estimate import estimate_gpu
from planner.engine.plan import Plan
from planner.engine.train_layout import sp_rearranging_copies
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Train
from planner.inputs.layouts import Layout
from planner.inputs.models import load_models
from planner.inputs.precisions import load_rules
from planner.inputs.runtimes import with_training
from planner.inputs.work import Setup

LLAMA = load_models().get("llama-2-7b")  # 32 layers of hidden 4,096; SwiGLU
SEQ = 4096
COPIES_PHASE = "sequence-parallel rearranging copies"


def _setup(**kw) -> Setup:
    r = load_rules()
    p = r.precision("bf16")
    return replace(Setup(p, r.default_kv_dtype(p), r.attention("sdpa")), **({"tp": 2, "sp_rearranges": True} | kw))


def _copies(batch: int, checkpointing: bool = False, **kw) -> tuple[float, float]:
    return sp_rearranging_copies(LLAMA, _setup(**kw), batch, batch * SEQ, checkpointing)


def test_every_gather_and_scatter_copies_the_whole_message_twice():
    # micro-batch 4: per layer 2 all-reduces' worth, each forward 1 gather + 1 reduce-scatter and backward the same:
    # 8 copies a layer, each reading and writing 4 x 4,096 rows x 4,096 x 2 B (134 MB)
    message = 4 * SEQ * 4096 * 2
    nbytes, calls = _copies(4)
    assert calls == pytest.approx(8 * 32)
    assert nbytes == pytest.approx(8 * 32 * 2 * message)


def test_a_micro_batch_of_one_gathers_as_a_view():
    # batch 1: the gathered [tp, seq/tp, hidden] re-concatenates as a view; the reduce-scatters still copy (4 a layer)
    message = SEQ * 4096 * 2
    nbytes, calls = _copies(1)
    assert calls == pytest.approx(4 * 32)
    assert nbytes == pytest.approx(4 * 32 * 2 * message)


def test_kempnerforge_compiled_per_projection_with_recompute():
    # 15 collectives a layer (tests/engine/test_tp_gathers.py), each a copy: 480 copies of 134 MB read and written
    nbytes, calls = _copies(4, checkpointing=True, fused_elementwise=True, tp_gather_per_projection=True)
    assert calls == pytest.approx(15 * 32)
    assert nbytes == pytest.approx(15 * 32 * 2 * 4 * SEQ * 4096 * 2)


def test_sequence_first_stacks_and_one_gpu_copy_nothing():
    assert sp_rearranging_copies(LLAMA, _setup(sp_rearranges=False), 4, 4 * SEQ, False) == (0.0, 0.0)
    assert sp_rearranging_copies(LLAMA, replace(_setup(), tp=1), 4, 4 * SEQ, False) == (0.0, 0.0)


def test_the_copies_are_a_memory_bound_phase_of_the_estimate():
    facts = load_facts()
    plan = Plan(LLAMA, Train(64, SEQ, 1.0, layout=Layout(tp=2)), "bf16", None, "sdpa-flash", "torch-compile", 1, 2)
    gpu = facts.catalog.get("h100-sxm")
    e = estimate_gpu(plan, gpu, facts)
    (phase,) = [p for p in e.phases if p.name == COPIES_PHASE]
    (group,) = phase.groups
    # micro-batch 1: only the reduce-scatters copy, 4 a layer without checkpointing (2 forward, 2 backward)
    assert group.bytes == pytest.approx(4 * 32 * 2 * SEQ * 4096 * 2)
    assert group.time_s == pytest.approx(group.bytes / (gpu.mem_bw_gbps * 1e9 * e.efficiency.mem_bw_efficiency))
    megatron_like = replace(facts, runtimes=with_training(facts.runtimes, "torch-compile", sp_shard_dim=0))
    other = estimate_gpu(plan, gpu, megatron_like)
    assert COPIES_PHASE not in [p.name for p in other.phases]
    assert e.seconds > other.seconds
