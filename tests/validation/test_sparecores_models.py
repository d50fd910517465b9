"""Spare Cores' rows written before their values (validation/to_predict/sparecores-*.yaml): the model profiles added
for them reproduce the parameter counts their source prints, and the rows say what the rules in the files' headers
say (batch 1, llama-bench's build and flash attention, vLLM's streamed time to first token)."""

from __future__ import annotations

import pytest

from planner import ROOT_DIR
from planner.validation.measured import load_measurements, validation_models

TO_PREDICT = ROOT_DIR / "validation" / "to_predict"


@pytest.mark.parametrize("model_id, gguf_params, not_counted", [
    # llama-bench's model_n_params for the GGUF files (SpareCores/sc-inspector-data @804d3c71, llm/stdout records)
    ("smollm-135m", 134_515_008, 0),
    ("gemma-2b", 2_506_172_416, 0),
    ("phi-4", 14_659_507_200, 0),
    # Qwen1.5's q/k/v biases: 24 layers x 3 x 1024 = 73,728 weights the decoder profile does not carry
    ("qwen1.5-0.5b", 619_570_176, 24 * 3 * 1024),
])
def test_added_profiles_have_the_parameters_llama_bench_prints(model_id, gguf_params, not_counted):
    assert validation_models().get(model_id).params == gguf_params - not_counted


def test_gemma_2_2b_has_the_reports_non_embedding_parameters():
    # Gemma 2 report (arXiv 2408.00118) table 2: 2,024,517,888 non-embedding parameters; the profile leaves out Gemma
    # 2's two extra RMSNorms a layer (pre/post feed-forward): 26 x 2 x 2304 = 119,808 weights; embedding 256,000 x 2304
    profile = validation_models().get("gemma-2-2b")
    assert profile.params - 256_000 * 2304 + 26 * 2 * 2304 == 2_024_517_888


def test_llama_bench_rows_are_batch_one_with_the_records_build_and_flash_attention():
    rows = [r for part in ("decode", "prefill")
            for r in load_measurements(TO_PREDICT / f"sparecores-llamabench-{part}.yaml", measured=False)]
    assert len({r.id for r in rows}) == len(rows) == 843  # 351 tg + 492 pp records the file's rule took
    for row in rows:
        assert (row.batch, row.build, row.attention, row.framework) == (1, 4753, "flash-attn-2", "llama.cpp"), row.id
        # tgN: N tokens from an empty context; ppN: one N-token prompt and nothing generated
        assert (row.prompt_tokens == 0) == (row.regime == "decode")
        assert (row.gen_tokens == 0) == (row.regime == "prefill")


def test_vllm_rows_time_one_streamed_request_at_a_time():
    rows = load_measurements(TO_PREDICT / "sparecores-vllm-sync.yaml", measured=False)
    assert len({r.id for r in rows}) == len(rows) > 0
    for row in rows:
        assert (row.batch, row.metric, row.engine, row.framework) == (1, "step_seconds", "v1", "vllm"), row.id
        # the TTFT rows are prefills of a request that goes on generating; the latency rows the whole request
        assert bool(row.streamed_ttft) == (row.regime == "prefill")
        assert row.gen_tokens == (0 if row.regime == "prefill" else {256: 128, 1024: 256, 4096: 512}[row.prompt_tokens])
