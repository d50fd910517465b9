"""FSDP's gradient reduce-scatter in the runtime's reduce dtype (TorchTitan's and KempnerForge's fp32), by hand."""

from dataclasses import replace

import pytest

from planner.engine.phases import job_passes
from planner.engine.plan import Plan, resolve_setup
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Train
from planner.inputs.models import load_models
from planner.inputs.runtimes import load_runtimes, with_training
from planner.inputs.work import Setup

FACTS = load_facts()
LLAMA = load_models().get("llama-2-7b")
SHARDS = 8


def _micro_comm(s: Setup) -> tuple[float, float, float]:
    """The FSDP micro-step's (bytes each GPU sends, ring steps, calls) over SHARDS GPUs."""
    w = Train(64, 2048, 1.0, "adamw", sharding="fsdp")
    phases = {ph.name: ph for ph, _ in job_passes(LLAMA, w, replace(s, shard=SHARDS), 1, 64, SHARDS)}
    (comm,) = phases["train micro-step"].comm
    return comm


def _setup(runtime: str) -> Setup:
    plan = Plan(LLAMA, Train(64, 2048, 1.0, "adamw", sharding="fsdp"), "bf16", runtime=runtime, batch=1, gpus=SHARDS)
    return resolve_setup(plan, FACTS.rules, FACTS.runtimes)


def test_bf16_fsdp_sends_three_bf16_copies_a_micro_step():
    # two gathers and one reduce-scatter, each 7/8 of the weights at 2 B: 7/8 x Psi x 6 B
    sent, steps, calls = _micro_comm(_setup("pytorch-eager"))
    assert sent == pytest.approx(7 / 8 * LLAMA.params * 6)
    assert calls == pytest.approx(3 * LLAMA.shard_units) and steps == pytest.approx(calls * 7)


def test_torchtitan_reduces_the_gradients_in_fp32():
    # TorchTitan's mixed_precision_reduce float32: the reduce-scatter sends 4 B a gradient, 7/8 x Psi x (2 + 2 + 4)
    s = _setup("torchtitan")
    assert s.grad_reduce_bytes == 4.0
    sent, _, calls = _micro_comm(s)
    assert sent == pytest.approx(7 / 8 * LLAMA.params * 8)
    assert calls == pytest.approx(3 * LLAMA.shard_units)  # the same calls, only bigger


def test_a_row_that_sets_fp32_reduce_gets_it_on_its_runtime_only():
    runtimes = with_training(load_runtimes(), "pytorch-eager", grad_reduce_bytes=4.0, grad_reduce_source="test")
    assert runtimes.get("pytorch-eager").training.grad_reduce_bytes == 4.0
    assert runtimes.get("torch-compile").training.grad_reduce_bytes == 0.0
    assert runtimes.get("pytorch-eager").training.layouts == load_runtimes().get("pytorch-eager").training.layouts
