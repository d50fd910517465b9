"""Tensor-parallel decode sources written before their values (validation/to_predict/, branch f6-tp-sources). Each
row loads as the predictors read it and plans the GPUs, batch, lengths and runtime its source states (nothing is
estimated)."""

from __future__ import annotations

from collections import Counter

from tests.fixtures.to_predict import planned_rows


def test_nemo_llama2_table_plans_each_tp_and_batch_on_both_gpus_with_the_chatbot_lengths():
    pairs = planned_rows("nemo-llama2-inference-trtllm.yaml")
    # the stored page holds 27 table rows: 7B at TP 1/2/4/8 x batch 1/2/4/8 (16), 13B at TP 1/2 x 4 batches (8) and
    # TP 4 at batch 1/2/4 (3); each row has an A100 and an H100 latency
    assert len(pairs) == 54
    assert Counter(r.gpu for r, _ in pairs) == {"a100-sxm-80gb": 27, "h100-sxm": 27}
    assert Counter(r.model for r, _ in pairs) == {"llama-2-7b": 32, "llama-2-13b": 22}
    for row, plan in pairs:
        assert plan.runtime == "tensorrt-llm" and row.metric == "step_seconds" and row.regime == "decode"
        assert plan.gpus in (1, 2, 4, 8) and plan.workload.n_sequences in (1, 2, 4, 8)
        # 'Configuration 1: Chatbot Conversation use case': input 128, output 20 tokens
        assert (plan.workload.prompt_tokens, plan.workload.gen_tokens) == (128, 20)
        assert f"-tp{plan.gpus}-b{plan.workload.n_sequences}-" in row.id
    assert not any(r.model == "llama-2-13b" and r.gpus == 8 for r, _ in pairs)  # cut off in the stored copy
