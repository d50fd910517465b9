"""Tensor-parallel and batched decode sources written before their values (validation/to_predict/, branch
f1-tp-sources): AMD's vLLM latency tables on 8 x MI300X and Azure's TensorRT-LLM static batches. Each row loads as the
predictors read it and plans the batch, lengths, GPUs, runtime and KV dtype its source states (nothing is estimated)."""

from __future__ import annotations

from collections import Counter

from tests.fixtures.to_predict import planned_rows


def test_rocm_latency_tables_plan_each_batch_at_tp8_with_each_editions_engine_and_kv_cache():
    pairs = planned_rows("rocm-vllm-mi300x-latency.yaml")
    # two editions x two models x two input lengths x batches 1, 2, 4, ..., 128 (8 sizes) = 64 rows
    assert len(pairs) == 64
    cells = Counter((r.id.split("-")[0], r.model, r.prompt_tokens) for r, _ in pairs)
    assert set(cells.values()) == {8} and len(cells) == 8
    for row, plan in pairs:
        assert plan.runtime == "vllm" and plan.gpus == 8 and row.gpu == "mi300x"
        assert plan.workload.n_sequences == row.batch and row.batch in {1, 2, 4, 8, 16, 32, 64, 128}
        assert plan.workload.prompt_tokens in (128, 2048) and plan.workload.gen_tokens == 2048
        # the vLLM 0.6.6 edition's command passes --kv-cache-dtype fp8 (V0 engine); the v0.10.0 edition's passes
        # none, so its cache is the fp16 activation dtype (V1 engine)
        old = row.id.startswith("rocmvllm066-")
        assert (row.engine, row.kv_dtype) == (("v0", "fp8") if old else ("v1", None))


def test_azure_static_batches_plan_tp8_only_for_the_70b_and_fp8_kv_only_on_hopper():
    pairs = planned_rows("azure-ai-benchmarking-guide-trtllm.yaml")
    # per VM: Mistral 7B and Llama 3 8B at batch 64, Llama 3 70B at 16/32/64 = 5 rows; three VMs
    assert len(pairs) == 15 and Counter(r.gpu for r, _ in pairs) == {"a100-sxm-80gb": 5, "h100-sxm": 5, "h200-sxm": 5}
    for row, plan in pairs:
        assert plan.runtime == "tensorrt-llm" and row.metric == "tokens_per_s"
        assert plan.gpus == (8 if row.model == "llama-3-70b" else 1)
        assert (plan.workload.prompt_tokens, plan.workload.gen_tokens) == (128, 8)
        # A100 has no FP8: its page states float16; the Hopper pages' fp8 comes from the tool's quantize.py call
        assert (row.precision, row.kv_dtype) == (("fp16", None) if row.gpu == "a100-sxm-80gb" else ("fp8", "fp8"))
