"""Training runtimes in the engine: a runtime that does not train (or a layout it lacks) is refused naming the field;
sharding auto chooses among the runtime's own layouts; each layout's data-parallel collectives hide as its runtime's
documented schedule says (data/runtimes.yaml training blocks)."""

import json
from dataclasses import replace

import pytest

from planner.engine.estimate import estimate_all, estimate_gpu
from planner.engine.plan import Plan
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate, Train
from planner.inputs.layouts import Layout
from planner.inputs.models import load_models
from tests.fixtures.cli_run import run

FACTS = load_facts()
LLAMA = load_models().get("llama-2-7b")
A100 = FACTS.catalog.get("a100-sxm-80gb")


def _train(runtime: str, sharding: str = "fsdp", gpus: int = 8) -> Plan:
    return Plan(LLAMA, Train(512, 2048, 1, "adamw", False, 1, sharding), "bf16", runtime=runtime, batch=1,
                gpus=gpus)


def _micro_step(e):
    return next(ph for ph in e.phases if ph.name == "train micro-step")


def test_a_serving_engine_asked_to_train_is_refused_naming_the_runtime():
    with pytest.raises(ValueError, match=r"^runtime vllm: vLLM runs generate and infer jobs, not train: choose one "
                                         r"that does \(pytorch-eager, .*megatron-lm, .*maxtext\)"):
        estimate_all(_train("vllm"), FACTS, ["a100-sxm-80gb"])


def test_a_training_stack_asked_to_generate_is_refused():
    with pytest.raises(ValueError, match="^runtime maxtext: .* runs train jobs, not generate: choose one that does"):
        estimate_all(Plan(LLAMA, Generate(10, 1, 10), "bf16", runtime="maxtext"), FACTS, ["a100-sxm-80gb"])


def test_a_layout_the_stack_lacks_is_refused_and_the_cli_says_so():
    with pytest.raises(ValueError, match="^sharding zero2: runtime megatron-lm does not run it"):
        estimate_all(_train("megatron-lm", "zero2"), FACTS, ["a100-sxm-80gb"])
    res = run("estimate", "--model", "llama-2-7b", "--workload", "train", "--runtime", "torchtitan", "--gpus", "8",
              "--sharding", "zero1", "--gpu", "a100-sxm-80gb")
    assert res.returncode == 2 and "sharding zero1: runtime torchtitan does not run it" in res.stderr
    assert "Traceback" not in res.stderr


def test_auto_chooses_among_the_stacks_own_layouts():
    """TorchTitan runs ddp and fsdp only: auto names no ZeRO-1/2 layout; DDP's 18 B/param of states (fp32 weights 4,
    their bf16 copy 2, fp32 gradients 4, Adam's moments 8) for 6.74B parameters (121 GB) does not fit 80 GB, so FSDP
    is picked."""
    e = estimate_gpu(_train("torchtitan", "auto"), A100, FACTS)
    why = e.reasons[0].text
    assert e.feasible and e.parallelism == "fsdp" and why.startswith("sharding auto: fsdp (")
    assert "did not fit: ddp (" in why and "zero1" not in why and "zero2" not in why


def test_deepspeed_stage_2_exposes_its_reduce_scatter_stage_3_hides_its_gathers():
    """DeepSpeed's overlap_comm is false below stage 3: nothing of ZeRO-2's gradient reduce-scatter runs under the
    compute; under stage 3 the gathers hide while the compute is longer than them."""
    z2 = _micro_step(estimate_gpu(_train("deepspeed", "zero2"), A100, FACTS))
    assert z2.comm_hidden_s == 0 and z2.comm_s > 0
    z3 = _micro_step(estimate_gpu(_train("deepspeed", "fsdp"), A100, FACTS))
    assert z3.comm_s == 0 and z3.comm_hidden_s > 0
    eager = _micro_step(estimate_gpu(_train("pytorch-eager", "zero2"), A100, FACTS))
    assert eager.comm_s == 0 and eager.comm_hidden_s > 0  # PyTorch's buckets run during backward


def test_megatron_leaves_one_of_32_layers_collectives_exposed():
    """Llama-2-7B has 32 layers: Megatron's chunked overlap hides 31/32 of FSDP's collectives (the micro-step's
    compute is longer than them), so 1/32 of them is exposed."""
    ph = _micro_step(estimate_gpu(_train("megatron-lm", "fsdp"), A100, FACTS))
    assert ph.comm_s == pytest.approx((ph.comm_s + ph.comm_hidden_s) / 32)



def test_planner_runtimes_lists_each_stacks_jobs_layouts_and_overlap():
    res = run("runtimes", "--format", "json")
    rows = {r["id"]: r for r in json.loads(res.stdout)}
    assert res.returncode == 0 and rows["vllm"]["jobs"] == "generate,infer" and rows["vllm"]["layouts"] is None
    assert rows["deepspeed"]["jobs"] == "train" and rows["deepspeed"]["overlap"] == "ddp 0,zero1 0,zero2 0,fsdp 1"
    assert rows["megatron-lm"]["layouts"] == "ddp,zero1,fsdp,tp,pp,cp" and rows["megatron-lm"]["exposed_layers"] == 1


def test_a_layout_part_the_runtime_lacks_is_refused_and_auto_leaves_it_out():
    # Accelerate's FSDP plugin declares no tensor parallel (data/runtimes.yaml: ddp, zero2, fsdp); DeepSpeed's
    # training engine no context parallel (ddp, zero1-3, tp, pp)
    plan = _train("hf-accelerate-fsdp")
    with pytest.raises(ValueError, match=r"^layout: runtime hf-accelerate-fsdp has no tp parallelism"):
        estimate_all(replace(plan, workload=replace(plan.workload, layout=Layout(tp=2))), FACTS, ["a100-sxm-80gb"])
    with pytest.raises(ValueError, match=r"^layout: runtime deepspeed has no cp parallelism"):
        estimate_all(replace(_train("deepspeed"), workload=replace(plan.workload, layout=Layout(cp=2))), FACTS,
                     ["a100-sxm-80gb"])
    auto = replace(plan, workload=replace(plan.workload, layout=Layout(auto=True), sharding="auto"))
    e = estimate_gpu(auto, A100, FACTS)
    assert e.setup.tp == 1 and e.setup.pp == 1 and e.setup.cp == 1  # only its own layouts were candidates
