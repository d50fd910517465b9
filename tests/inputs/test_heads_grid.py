"""A decode attention kernel with one thread block per sequence and query head and no split along the keys
(data/runtimes.yaml pytorch-eager decode_heads_grid_on; planner/inputs/models/decoder.py heads_grid_share): at a
small batch it reads the cache on batch x heads of the GPU's SMs."""

import json
from dataclasses import replace

import pytest

from planner.engine.feasibility import precision_on
from planner.engine.plan import Plan, resolve_setup
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


def _setup(attention: str, runtime: str = "pytorch-eager") -> Setup:
    plan = Plan(MODEL, Generate(1, 1, 2), "bf16", None, attention, runtime)
    return resolve_setup(plan, load_rules(), load_runtimes())


def _attention(s: Setup, batch: int):
    return next(g for g in MODEL.decode_work(s, batch) if g.name == "attention")


def test_few_blocks_read_the_cache_at_their_share_of_the_sms():
    """By hand, on a GPU of 32 SMs: batch 1 launches 8 blocks (8 heads), 8 / 32 = 0.25 of the SMs. A step's cache
    bytes per position are 3 passes (the kernel's read, torch.cat's read and write); only the kernel's read runs at
    0.25 of the stream rate: time 2 x 1 + 1 / 0.25 = 6 pass-times for 3 passes, so the group moves at 3 / 6 = 0.5
    of the stream rate. Batch 2: 16 blocks, 0.5: 3 / (2 + 2) = 0.75. Batch 4: 32 blocks fill the SMs: 1."""
    s = replace(_setup("sdpa"), sm_count=32)
    assert s.heads_grid
    assert MODEL.heads_grid_share(s, 1) == pytest.approx(0.25)
    assert _attention(s, 1).bw_factor == pytest.approx(0.5)
    assert _attention(s, 2).bw_factor == pytest.approx(0.75)
    assert _attention(s, 4).bw_factor == pytest.approx(1.0)
    assert _attention(s, 8).bw_factor == pytest.approx(1.0)
    assert "8 of 32 SMs" in _attention(s, 1).formula
    # the bytes themselves are the same as a kernel that fills the GPU: only their rate changes
    assert _attention(s, 1).bytes_per_pos == _attention(replace(s, heads_grid=False), 1).bytes_per_pos


def test_tensor_parallel_gives_each_gpu_its_heads_only():
    """tp 2: 4 heads a GPU; batch 1 on 32 SMs: 4 / 32 = 0.125; 3 / (2 + 8) = 0.3."""
    s = replace(_setup("sdpa"), sm_count=32, tp=2)
    assert _attention(s, 1).bw_factor == pytest.approx(0.3)


def test_only_kernels_without_a_key_split_pay_and_the_gpu_brings_its_sm_count():
    """flash-attn's mha_fwd splits the keys (Flash-Decoding heuristic): not charged; nor vLLM's own decode kernel.
    precision_on gives the setup the GPU's SM count (an A100 has 108 SMs: Tri Dao, flash-attention #609)."""
    assert not _setup("flash-attn-2").heads_grid
    assert not _setup("flash-attn-2", "vllm").heads_grid
    assert _setup("sdpa-efficient").heads_grid
    a100 = load_catalog().get("a100-sxm-80gb")
    s = precision_on(a100, _setup("sdpa"), "pytorch-eager")
    assert s.sm_count == 108
    assert MODEL.heads_grid_share(s, 1) == pytest.approx(8 / 108)
    assert precision_on(a100, _setup("flash-attn-2"), "pytorch-eager").sm_count == 0
    rt = load_runtimes().get("pytorch-eager")
    assert set(rt.decode_heads_grid_on) <= {a.id for a in load_rules().attention_backends}
    assert "Flash-Decoding" in rt.decode_heads_grid_source


def test_an_unknown_sm_count_charges_nothing():
    s = _setup("sdpa")
    assert s.sm_count == 0
    assert _attention(s, 1).bw_factor == pytest.approx(1.0)
