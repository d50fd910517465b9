"""Prefill/decode disaggregation: the KV cache's move between the pools, decode-only TPOT, and the search's choice.
Expected figures are derived by hand from the model's shape, the links' datasheets and data/interconnects.yaml."""

from dataclasses import replace

import pytest

from planner.engine.deployment import disaggregation_verdict, search
from planner.engine.plan import Plan
from planner.engine.serving_sim import (Pools, Requests, Slo, combine_pools, kv_link, kv_transfer_seconds, pool_runs,
                                        serve_rate, step_times)
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models
from planner.inputs.serving_runtimes import load_schedulers
from planner.views.skyserve import launch_command

FACTS = load_facts()
H100 = FACTS.catalog.get("h100-sxm")
SCHEDULERS = load_schedulers()
VLLM = SCHEDULERS.get("vllm").on(H100.id, H100.vram_gib)
# Llama-3-8B: 32 layers, 8 KV heads of 128, bf16: K and V = 2 x 32 x 8 x 128 x 2 B = 131,072 B per token
KV_BYTES_PER_TOKEN = 2 * 32 * 8 * 128 * 2
# long prompts, short answers: the mix where a prompt's prefill step stalls the decodes around it
LONG = Requests((8000,), (16,))


def _plan(prompt: int, output: int) -> Plan:
    return Plan(load_models().get("llama-3-8b"), Generate(1, prompt, output), "bf16", runtime="vllm")


def test_a_prompts_kv_cache_crosses_nvlink_inside_a_node_and_the_fabric_between_nodes():
    st = step_times(_plan(4096, 16), H100, FACTS, VLLM, 1, 4096)
    assert st.kv_gb_per_token * 1e9 == pytest.approx(KV_BYTES_PER_TOKEN, rel=1e-6)
    inside = kv_link(H100, 1, 2)  # two 1-GPU servers in one 8-GPU node: NVLink 450 GB/s a direction x 0.81 bus share
    assert inside.gbps == pytest.approx(450 * 0.81)
    across = kv_link(H100, 1, 9)  # nine servers outgrow the node: NDR 400 Gb/s per GPU = 50 GB/s x 0.96 = 48 GB/s
    assert across.gbps == pytest.approx(48.0)
    # 4096 tokens x 131,072 B = 536.9 MB: 1.47 ms over NVLink, 11.18 ms over the fabric
    assert kv_transfer_seconds(st, 4096, inside) == pytest.approx(4096 * KV_BYTES_PER_TOKEN / 364.5e9, rel=1e-6)
    assert kv_transfer_seconds(st, 4096, across) == pytest.approx(0.011185, rel=1e-3)


def test_tensor_parallel_servers_move_their_shards_at_once():
    st1 = step_times(_plan(4096, 16), H100, FACTS, VLLM, 1, 4096)
    st2 = step_times(_plan(4096, 16), H100, FACTS, VLLM, 2, 4096)
    link = kv_link(H100, 2, 2)  # 4 GPUs, one node
    # each of the 2 GPUs holds 4 of the 8 KV heads, half the bytes, and sends over its own link: half the time
    assert kv_transfer_seconds(st2, 4096, link) == pytest.approx(kv_transfer_seconds(st1, 4096, link) / 2, rel=1e-6)


def test_disaggregation_meets_a_tpot_target_that_aggregated_serving_misses_at_the_same_rate_and_gpus():
    """4 requests/s of 8000-token prompts and 16-token answers on three H100s, p95 TPOT target 12 ms.
    By hand: an 8000-token prefill is at least 2 x 8.03e9 x 8000 = 1.28e14 FLOP, 0.13 s at the H100's 989 TFLOPS;
    a decode step reads at least the 16.06 GB of weights, 4.8 ms at 3.35 TB/s. Aggregated (3 replicas at 4/3
    requests/s), a request's 15 token gaps span at least 15 x 4.8 = 72 ms, and another prompt lands in them with
    probability at least 1 - exp(-4/3 x 0.072) = 9 % > 5 %; its prefill rides in one of those steps, so the p95 TPOT
    is at least (0.13 + 14 x 0.0048) / 15 = 13.1 ms: missed. Disaggregated (2 prefill + 1 decode server), decode steps
    carry no prompt: a step of a few requests reads the weights and their 8k-token caches (1.05 GB each), about
    (16.06 + 4 x 1.05) GB / (0.8 x 3.35 TB/s) + 0.26 ms of vLLM's host work = 7.8 ms: met."""
    plan = _plan(8000, 16)
    slo = Slo(5.0, 0.012)
    st = step_times(plan, H100, FACTS, VLLM, 1, LONG.mean_context)
    agg = serve_rate(st, VLLM, LONG, 4.0 / 3, slo)
    assert agg.tpot[95] >= 0.0131 and not agg.meets_slo
    pools = Pools(2, 1, kv_link(H100, 1, 3))
    pre = pool_runs(st, VLLM, LONG, 4.0, 2, True, 600, 0)
    dec = pool_runs(st, VLLM, LONG, 4.0, 1, False, 600, 0)
    split = combine_pools(st, LONG, pools, pre, dec, 4.0, slo, None, 600, 0)
    assert split.settled and split.tpot[95] <= 0.012 and split.meets_slo
    # its TTFT carries the prefill (>= 0.13 s) and the move (8000 x 131,072 B / 364.5 GB/s = 2.9 ms)
    assert split.ttft[50] >= 0.13 + 8000 * KV_BYTES_PER_TOKEN / 364.5e9


def test_the_search_puts_disaggregated_beside_aggregated_and_says_which_wins():
    dep = search(_plan(8000, 16), FACTS, SCHEDULERS, [H100], LONG, 4.0, Slo(5.0, 0.012), runtimes=("vllm",),
                 tps=(1,))
    best = dep.best
    assert best is not None and best.disaggregated and best.point.tpot[95] <= 0.012
    price = FACTS.prices.for_gpu(H100)["secure"].usd_hr
    assert best.usd_per_hour == pytest.approx((best.pools.prefill + best.pools.decode) * price)
    assert any(not c.disaggregated for c in dep.runner_ups)  # the aggregated try is reported with why it loses
    assert disaggregation_verdict(dep).startswith("disaggregated serving wins")


def test_llama_cpp_does_not_split_and_short_prompts_keep_aggregated_serving():
    assert not SCHEDULERS.get("llama.cpp").disaggregated
    assert all(SCHEDULERS.get(r).disaggregated for r in ("vllm", "sglang", "tensorrt-llm"))
    dep = search(_plan(512, 256), FACTS, SCHEDULERS, [H100], Requests((512,), (256,)), 20.0, Slo(0.5, 0.05),
                 runtimes=("llama.cpp",), tps=(1,))
    assert not any(c.disaggregated for c in (dep.runner_ups + dep.left_out))
    assert disaggregation_verdict(dep) == ""


def test_an_fp8_kv_cache_doubles_the_tokens_served_and_halves_the_bytes_moved():
    """--kv-dtype reaches the serving simulation: an fp8 cache stores 1 byte per element in place of bf16's 2, so
    65,536 B per Llama-3-8B token; the weights and activations are unchanged, so the same free memory holds twice
    the tokens, and a prompt's cache moves in half the time."""
    bf16 = step_times(_plan(4096, 16), H100, FACTS, VLLM, 1, 4096)
    fp8_plan = Plan(load_models().get("llama-3-8b"), Generate(1, 4096, 16), "bf16", runtime="vllm", kv_dtype="fp8")
    fp8 = step_times(fp8_plan, H100, FACTS, VLLM, 1, 4096)
    assert fp8.kv_gb_per_token * 1e9 == pytest.approx(KV_BYTES_PER_TOKEN / 2, rel=1e-6)
    assert fp8.fixed_gb == pytest.approx(bf16.fixed_gb)
    assert abs(fp8.kv_tokens - 2 * bf16.kv_tokens) <= 1
    link = kv_link(H100, 1, 2)
    assert kv_transfer_seconds(fp8, 4096, link) == pytest.approx(kv_transfer_seconds(bf16, 4096, link) / 2)


def test_sglangs_overlap_scheduler_takes_vllms_host_work_off_each_step():
    """SGLang v0.4's scheduler prepares the next batch on the CPU while the GPU runs this one (serving.yaml
    host_overlapped, with its source); SGLang's steps borrow vLLM's runtime profile, whose 260 us of host work per
    step (runtimes.yaml step_host_us, V1's) the GPU waits for under vLLM. So the same decode step is 0.26 ms
    shorter."""
    sglang = SCHEDULERS.get("sglang").on(H100.id, H100.vram_gib)
    assert sglang.host_overlapped and not VLLM.host_overlapped
    plan = _plan(512, 256)
    v = step_times(plan, H100, FACTS, VLLM, 1, 768)
    s = step_times(plan, H100, FACTS, sglang, 1, 768)
    for b in (1, 16, 128):
        assert v.seconds(b, 0, b * 768, 0.0, b) - s.seconds(b, 0, b * 768, 0.0, b) == pytest.approx(0.26e-3, rel=1e-3)


def test_an_fp8_kv_deployment_launches_with_the_engines_flag_and_leaves_out_engines_without_one():
    """vLLM takes --kv-cache-dtype fp8 (its engine arguments); trtllm-serve has no such flag and llama.cpp no fp8
    cache (serving.yaml kv_cache_dtypes, sources there): those two are left out, each saying why."""
    plan = Plan(load_models().get("llama-3-8b"), Generate(1, 512, 256), "bf16", runtime="vllm", kv_dtype="fp8")
    dep = search(plan, FACTS, SCHEDULERS, [H100], Requests((512,), (256,)), 20.0, Slo(0.5, 0.05), tps=(1,))
    assert dep.best is not None and dep.best.sched.id in ("vllm", "sglang")
    command = launch_command(dep.best, SCHEDULERS, "meta-llama/Meta-Llama-3-8B", 768)
    assert command.endswith({"vllm": "--kv-cache-dtype fp8", "sglang": "--kv-cache-dtype fp8_e4m3"}[dep.best.sched.id])
    out = {c.sched.id: c.why for c in dep.runner_ups + dep.left_out if "KV cache" in c.why}
    assert set(out) == {"tensorrt-llm", "llama.cpp"} and all("no fp8 KV cache" in w for w in out.values())
    bf16 = replace(plan, kv_dtype="bf16")  # the model's own dtype, named: no flag, nobody left out for it
    own = search(bf16, FACTS, SCHEDULERS, [H100], Requests((512,), (256,)), 20.0, Slo(0.5, 0.05), tps=(1,))
    assert own.best is not None and own.best.kv_flags == ""
    assert not any("KV cache (data/serving.yaml" in c.why for c in own.runner_ups + own.left_out)
