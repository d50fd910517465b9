"""Hugging Face's repeat_kv in a decode step: the KV heads copied out to the query heads, then attended
(data/runtimes.yaml pytorch-eager kv_heads_repeated_on; planner/inputs/models/decoder.py KV_REPEAT_PASSES)."""

import json
from dataclasses import replace

import pytest

from planner.engine.plan import Plan, resolve_setup
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models, parse_model_text
from planner.inputs.precisions import load_rules
from planner.inputs.runtimes import load_runtimes
from planner.inputs.work import Setup

# A small grouped-query decoder: 2 layers, 8 query heads and 2 KV heads of 32 (hidden 256): 4 query heads a KV head
GQA = {"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "hidden_size": 256, "num_hidden_layers": 2,
       "num_attention_heads": 8, "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1000,
       "max_position_embeddings": 4096, "tie_word_embeddings": False}


def _model(config):
    return parse_model_text(json.dumps(config), "config.json", "test")


def _attention(m, s: Setup, batch: int = 1):
    return next(g for g in m.decode_work(s, batch) if g.name == "attention")


def _setup(attention: str, runtime: str) -> Setup:
    plan = Plan(_model(GQA), Generate(1, 1, 2), "bf16", None, attention, runtime)
    return resolve_setup(plan, load_rules(), load_runtimes())


def test_a_step_that_repeats_the_kv_heads_writes_and_reads_the_copy_group_times_the_cache():
    """By hand, bf16, batch 1: a cached position holds K and V of 2 heads x 32 = 2 x 64 elements x 2 B = 256 B a
    layer, 512 B over both layers. The attention kernel alone reads it once: 512 B per position. torch.cat reads it
    and writes it once more: 3 x 512 = 1,536 B. repeat_kv reads it once (standing for the kernel's own read) and
    writes a copy of 8 / 2 = 4 times its size, which the kernel reads: 1 + 2 + 2 x 4 = 11 passes, 5,632 B per
    position. At position p = 1000 the step's attention moves 5.632 MB over the cache, against 1.536 MB with the
    cache attended as is."""
    m = _model(GQA)
    s = _setup("flash-attn-2", "pytorch-eager")
    assert s.kv_concat and s.kv_repeat
    repeated = _attention(m, s)
    as_cached = _attention(m, replace(s, kv_repeat=False))
    assert as_cached.bytes_per_pos == pytest.approx(1536)
    assert repeated.bytes_per_pos == pytest.approx(5632)
    assert repeated.bytes == as_cached.bytes  # the new token's K, V and Q are the same either way
    assert (repeated.bytes + 1000 * repeated.bytes_per_pos) - (as_cached.bytes + 1000 * as_cached.bytes_per_pos) \
        == pytest.approx(5.632e6 - 1.536e6)
    assert "repeat_kv" in repeated.formula and "repeat_kv" not in as_cached.formula
    # batch 3: three caches, three copies
    assert _attention(m, s, 3).bytes_per_pos == pytest.approx(3 * 5632)


def test_a_model_without_grouped_query_heads_is_not_copied():
    """repeat_kv returns the cache itself when n_rep is 1 (heads == KV heads): nothing but torch.cat's 3 passes, 8
    heads x 32 x 2 (K, V) x 2 B x 2 layers = 2,048 B, x 3 = 6,144 B per position."""
    mha = _model({**GQA, "num_key_value_heads": 8})
    assert _attention(mha, _setup("sdpa", "pytorch-eager")).bytes_per_pos == pytest.approx(6144)


def test_only_the_attention_paths_that_repeat_in_transformers_pay_the_copy():
    """pytorch-eager (Hugging Face transformers) repeats on its eager, SDPA and FlashAttention-2 paths; a backend
    off its list (xformers) and a runtime with its own cache and GQA kernel (torch-compile: gpt-fast's cache in
    place) do not."""
    assert _setup("manual", "pytorch-eager").kv_repeat
    assert _setup("sdpa", "pytorch-eager").kv_repeat
    assert not _setup("xformers", "pytorch-eager").kv_repeat
    assert not _setup("flash-attn-2", "torch-compile").kv_repeat
    assert not _setup("flash-attn-2", "vllm").kv_repeat
    rt = load_runtimes().get("pytorch-eager")
    assert "repeat_kv" in rt.kv_heads_repeated_source
    known = {a.id for a in load_rules().attention_backends}
    assert set(rt.kv_heads_repeated_on) <= known


def test_latent_attention_has_no_kv_heads_to_repeat():
    m = next(x for x in load_models().models if getattr(x, "kv_lora_rank", 0))
    s = _setup("sdpa", "pytorch-eager")
    assert m.kv_repeat_passes(s) == 0.0
