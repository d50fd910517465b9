"""A decode attention kernel with one thread block per sequence and query head and no split along the keys
(data/runtimes.yaml pytorch-eager decode_heads_grid_on; planner/inputs/models/decoder.py heads_grid_share): at a
small batch it reads the cache on batch x heads of the GPU's SMs."""

import json
from dataclasses import replace

import pytest

from planner.engine.plan import Plan, resolve_setup
from planner.engine.roofline import group_bw_factor
from planner.inputs.catalog import load_catalog
from planner.inputs.jobs import Generate
from planner.inputs.models import parse_model_text
from planner.inputs.precisions import load_rules
from planner.inputs.runtimes import load_runtimes
from planner.inputs.work import Setup

# A small multi-head decoder: 2 layers, 8 heads of 32 (hidden 256), as many KV heads (no repeat_kv copy)
MHA = {"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "hidden_size": 256, "num_hidden_layers": 2,
       "num_attention_heads": 8, "num_key_value_heads": 8, "intermediate_size": 512, "vocab_size": 1000,
       "max_position_embeddings": 4096, "tie_word_embeddings": False}
MODEL = parse_model_text(json.dumps(MHA), "config.json", "test")
A100 = load_catalog().get("a100-sxm-80gb")


def _setup(attention: str, runtime: str = "pytorch-eager") -> Setup:
    plan = Plan(MODEL, Generate(1, 1, 2), "bf16", None, attention, runtime)
    return resolve_setup(plan, load_rules(), load_runtimes())


def _attention(s: Setup, batch: int):
    return next(g for g in MODEL.decode_work(s, batch) if g.name == "attention")


def _on(sms: int):
    return replace(A100, sm_count=sms)


def test_few_blocks_read_the_cache_at_their_share_of_the_sms():
    """By hand, on a GPU of 32 SMs: batch 1 launches 8 blocks (8 heads), 8 / 32 = 0.25 of the SMs. A step's cache
    bytes per position are 3 passes (the kernel's read, torch.cat's read and write); only the kernel's read runs at
    0.25 of the stream rate: time 2 x 1 + 1 / 0.25 = 6 pass-times for 3 passes, so the group moves at 3 / 6 = 0.5
    of the stream rate. Batch 2: 16 blocks, 0.5: 3 / (2 + 2) = 0.75. Batch 4: 32 blocks fill the SMs: 1."""
    s = _setup("sdpa")
    assert s.heads_grid
    one = _attention(s, 1)
    assert one.grid_blocks == pytest.approx(8)
    assert one.grid_read == pytest.approx(1 / 3)  # the kernel's read: 1 of the 3 passes, at the full stream rate
    assert group_bw_factor(one, _on(32)) == pytest.approx(0.5)
    assert group_bw_factor(_attention(s, 2), _on(32)) == pytest.approx(0.75)
    assert group_bw_factor(_attention(s, 4), _on(32)) == pytest.approx(1.0)
    assert group_bw_factor(_attention(s, 8), _on(32)) == pytest.approx(1.0)
    assert "one block per sequence and query head (8)" in one.formula
    # the bytes themselves are the same as a kernel that fills the GPU: only their rate changes
    assert one.bytes_per_pos == _attention(replace(s, heads_grid=False), 1).bytes_per_pos


def test_an_a100_runs_a_batch_one_step_on_eight_of_its_108_sms():
    """An A100 has 108 SMs (Tri Dao, flash-attention #609): 1 / (1 + (1/3) x (108 / 8 - 1)) = 1 / 5.1667 = 0.1935;
    the group's time at a long context is 5.17 times the streaming one."""
    assert A100.sm_count == 108
    assert group_bw_factor(_attention(_setup("sdpa"), 1), A100) == pytest.approx(1 / (1 + 12.5 / 3))


def test_tensor_parallel_gives_each_gpu_its_heads_only():
    """tp 2: 4 heads a GPU; batch 1 on 32 SMs: 4 / 32 = 0.125; 3 / (2 + 8) = 0.3."""
    g = _attention(replace(_setup("sdpa"), tp=2), 1)
    assert g.grid_blocks == pytest.approx(4)
    assert group_bw_factor(g, _on(32)) == pytest.approx(0.3)


def test_only_kernels_without_a_key_split_pay():
    """flash-attn's mha_fwd splits the keys (Flash-Decoding heuristic): not charged; nor vLLM's own decode kernel."""
    assert not _setup("flash-attn-2").heads_grid
    assert _attention(_setup("flash-attn-2"), 1).grid_blocks == 0
    assert not _setup("flash-attn-2", "vllm").heads_grid
    assert _setup("sdpa-efficient").heads_grid
    rt = load_runtimes().get("pytorch-eager")
    assert set(rt.decode_heads_grid_on) <= {a.id for a in load_rules().attention_backends}
    assert "Flash-Decoding" in rt.decode_heads_grid_source


def test_an_unknown_sm_count_charges_nothing():
    one = _attention(_setup("sdpa"), 1)
    assert group_bw_factor(one, _on(0)) == one.bw_factor == 1.0
