"""Three sources written before their values (validation/README.md 108-110): each file's rows become the plans their
sources describe. Expected figures come from the sources' scripts and tables, derived by hand in the comments."""

from __future__ import annotations

import math

from planner.validation.measured import validation_models
from tests.fixtures.to_predict import planned_rows

FLAGPERF = "flagperf-megatron-train.yaml"


def test_flagperf_rows_plan_megatron_with_the_tables_layouts_and_zero1():
    pairs = planned_rows(FLAGPERF)
    assert len(pairs) == 22
    for row, plan in pairs:
        dp = row.gpus // (row.tp * row.pp)
        assert plan.runtime == "megatron-lm", row.id
        lay = plan.workload.layout
        assert (lay.tp, lay.pp) == (row.tp, row.pp), row.id
        # every case passes --use-distributed-optimizer (Megatron-DeepSpeed: ZeRO stage 1 in ds_config.json)
        assert plan.workload.sharding == ("ddp" if dp == 1 else "zero1"), row.id
        # the plan's micro-batch is the config's localbs / batchsize (or the row's LBS); the step is the global batch
        assert plan.batch * row.grad_accum * dp == row.batch, row.id


def test_flagperf_llama3_steps_are_the_scripts_4m_tokens():
    # pretrain_llama3.sh: --global-batch-size 512 --seq-length 8192 = 4,194,304 tokens a step ('4M tokens' in the
    # README); the 440-GPU row's fix_hp gbs=1760 = 220 data-parallel ranks x 8 micro-batches of 1
    for row, _ in planned_rows(FLAGPERF):
        if "llama3-8b" in row.id or "llama3-70b" in row.id:
            assert row.seq_len == 8192
            assert row.batch * row.seq_len == (1760 * 8192 if row.gpus == 440 else 4_194_304), row.id
    row_440 = next(r for r, _ in planned_rows(FLAGPERF) if r.gpus == 440)
    assert (row_440.tp, row_440.gpus // row_440.tp, row_440.grad_accum) == (2, 220, 8)


def test_aquila2_ffn_is_flagscale_multiple_of_256_rule():
    # --swiglu --multiple-of 256, hidden 4096: 256 x ceil(2/3 x 4 x 4096 / 256) = 256 x ceil(42.67) = 256 x 43 = 11008
    model = validation_models().get("flagperf-aquila2-7b")
    assert model.ffn == 256 * math.ceil(2 / 3 * 4 * 4096 / 256) == 11008
    assert (model.layers, model.hidden, model.kv_heads, model.vocab) == (32, 4096, 32, 100008)


def test_premai_rows_are_batch1_decodes_on_each_engines_runtime():
    pairs = planned_rows("premai-benchmarks-a100.yaml")
    assert len(pairs) == 34  # 17 configurations a model, two models
    runtime_of = {"hf": "pytorch-eager", "litgpt": "pytorch-eager", "autogptq": "pytorch-eager",
                  "autoawq": "autoawq", "llamacpp": "llama.cpp", "trtllm": "tensorrt-llm", "optnv": "tensorrt-llm",
                  "vllm": "vllm"}
    for row, plan in pairs:
        engine = row.id.split("-")[2]
        assert plan.runtime == runtime_of[engine], row.id
        assert (row.batch, row.gpus, row.gen_tokens) == (1, 1, 512), row.id
        # vllm 0.4.0 (bench_vllm/setup.sh for CUDA 12.1) predates 0.6.0's asynchronous output processing
        assert (row.engine == "v0-sync") == (engine == "vllm"), row.id


def test_flash_attention_rows_are_the_tables_token_batches():
    # 'Batch size (tokens)': 0.5M = 256 x 2048 for 125M-760M, 1M = 512 x 2048 for 1.3B and 2.7B
    pairs = planned_rows("flash-attention-gpt3-pile.yaml")
    tokens = {row.model: row.batch * row.seq_len for row, _ in pairs}
    assert tokens == {"fa-pile-gpt3-125m": 524_288, "fa-pile-gpt3-355m": 524_288, "fa-pile-gpt3-760m": 524_288,
                      "fa-pile-gpt3-1.3b": 1_048_576, "fa-pile-gpt3-2.7b-hd128": 1_048_576}
    for row, plan in pairs:
        assert plan.batch * row.grad_accum * row.gpus == row.batch, row.id
    # gpt3-2.7B-flash-hdim128.yaml: n_embd 2560 over n_head 20 -> head dimension 128 (the README's 'instead of 80')
    model = validation_models().get("fa-pile-gpt3-2.7b-hd128")
    assert model.hidden // model.heads == 128
