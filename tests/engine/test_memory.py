"""Memory breakdowns and the largest batch that fits."""

import pytest

from planner.engine.memory import breakdown, max_batch
from planner.inputs.models import load_models
from planner.inputs.precisions import load_rules
from planner.inputs.jobs import Generate, Train
from planner.inputs.work import Setup


def _setup(precision, kv=None, attention="sdpa", tp=1):
    r = load_rules()
    p = r.precision(precision)
    return Setup(p, r.kv_dtype(kv) if kv else r.default_kv_dtype(p), r.attention(attention), tp)


def test_weights_and_kv_cache_by_hand():
    m = load_models().get("cfdna-gen")
    mem = breakdown(m, Generate(1000, 1, 165), _setup("fp16"), batch=128, context_gb=0.5)
    assert mem.get("weights") == pytest.approx(132_192_000 * 2 / 1e9)
    assert mem.get("kv_cache") == pytest.approx(128 * 166 * 21_504 * 2 / 1e9)
    assert mem.get("cuda_context") == 0.5


def test_fp16_halves_weight_memory_of_fp32():
    m = load_models().get("llama-3-8b")
    w = Generate(1, 128, 128)
    assert breakdown(m, w, _setup("fp16"), 1, 0).get("weights") * 2 == pytest.approx(
        breakdown(m, w, _setup("fp32"), 1, 0).get("weights"))


def test_training_with_adamw_holds_16_bytes_per_parameter_before_activations():
    m = load_models().get("gpt2-124m")
    mem = breakdown(m, Train(100, 1024, 1), _setup("fp32"), 1, 0)
    # fp32 weights 4 + grads 4 + Adam m, v 8 (Rajbhandari et al., ZeRO, sec. 3.1)
    assert mem.get("weights") + mem.get("gradients") + mem.get("optimizer") == pytest.approx(16 * m.params / 1e9)


def test_max_batch_is_the_largest_that_fits():
    m = load_models().get("cfdna-gen")
    w, s = Generate(10**6, 1, 165), _setup("bf16")
    b = max_batch(m, w, s, 24.0, 0.5, 10**6)
    assert breakdown(m, w, s, b, 0.5).total_gb <= 24.0 < breakdown(m, w, s, b + 1, 0.5).total_gb


def test_tensor_parallel_splits_weights():
    m = load_models().get("llama-3-70b")
    one = breakdown(m, Generate(1, 128, 128), _setup("fp16"), 1, 0).get("weights")
    four = breakdown(m, Generate(1, 128, 128), _setup("fp16", tp=4), 1, 0).get("weights")
    assert four == pytest.approx(one / 4)


def test_fsdp_shards_weights_gradients_and_optimizer_states():
    from dataclasses import replace
    m = load_models().get("llama-2-7b")
    w = Train(64, 2048, 1, sharding="fsdp")
    s8 = replace(_setup("bf16"), shard=8)
    mem = breakdown(m, w, s8, 1, 0)
    # ZeRO-3: 16 B/param of fp32 states split 8 ways, + two gathered bf16 layers (prefetch)
    assert mem.get("gradients") + mem.get("optimizer") == pytest.approx(12 * m.params / 8 / 1e9)
    assert mem.get("weights") == pytest.approx((4 * m.params / 8 + 2 * 2 * m.layer_matmul_params) / 1e9)


def test_usable_memory_is_the_target_share_of_what_the_gpu_reports():
    from planner.engine.memory import usable_gb
    from planner.inputs.catalog import load_catalog
    l40s = load_catalog().get("l40s")
    # 46,068 MiB reported (ECC on) x 2**20 B = 48.31 GB; 90 % of it
    assert usable_gb(l40s, 0.9) == pytest.approx(0.9 * 46068 * 2**20 / 1e9)
    assert usable_gb(l40s, 1.0) < l40s.vram_gb  # even at 100 % the ECC reserve is not usable
