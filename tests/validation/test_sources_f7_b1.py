"""Round-5 batch-1 sources written before their values (validation/to_predict/tinychat-awq-rtx4090.yaml,
autoawq-pr320-a100.yaml and autoawq-issue276-a100.yaml): each row becomes the plan its source describes (runtime,
AWQ kernel version, lengths). Nothing here estimates a row."""

from __future__ import annotations

from tests.fixtures.to_predict import planned as plan_of
from tests.fixtures.to_predict import to_predict_rows as rows_of


def test_tinychat_decode_rows_are_256_steps_after_four_context_tokens():
    # README footnote: 'only 4 context tokens' (exLLaMA's setting); benchmark.py: token_num = 256
    decode = [r for r in rows_of("tinychat-awq-rtx4090.yaml") if r.regime == "decode"]
    assert len(decode) == 7  # 4 models x (FP16, INT4) less FP16 LLaMA-2-13B (OOM on 24 GB)
    assert all((r.prompt_tokens, r.gen_tokens, r.batch, r.gpu) == (4, 256, 1, "rtx-4090") for r in decode)


def test_tinychat_awq_rows_switch_kernel_at_eight_rows():
    # llm-awq WQLinear.forward: gemv below 8 rows (a decode step), gemm above (a prompt of >= 256 tokens)
    rows = [r for r in rows_of("tinychat-awq-rtx4090.yaml") if r.framework == "autoawq"]
    plans = {r.id: plan_of(r) for r in rows}
    assert {p.runtime for p in plans.values()} == {"autoawq"}
    for r in rows:
        assert plans[r.id].precision == ("awq-gemv" if r.regime == "decode" else "awq-gemm"), r.id


def test_tinychat_prefill_tables_cover_each_length_per_system():
    pre = [r for r in rows_of("tinychat-awq-rtx4090.yaml") if r.regime == "prefill"]
    # 2 models x 2 rows x 6 lengths in the dedicated tables; the comparison table's 3 systems x 5 lengths were left
    # out before predicting (their 4-bit formats are not stated)
    assert len(pre) == 2 * 2 * 6
    assert not [r for r in pre if r.id.startswith("tinychat-cmp-")]
    assert all(r.metric == "step_seconds" and r.gen_tokens == 0 for r in pre)


def test_pr320_rows_are_one_prefill_and_one_decode_per_round():
    rows = rows_of("autoawq-pr320-a100.yaml")
    assert len(rows) == 16
    for length in (32, 64, 128, 256, 512, 1024, 2048, 4096):
        regimes = sorted(r.regime for r in rows if r.prompt_tokens == length)
        assert regimes == ["decode", "prefill"], length
    # benchmark.py generates as many tokens as the prompt holds ('Decode Length' = 'Prefill Length')
    assert all(r.gen_tokens == r.prompt_tokens for r in rows if r.regime == "decode")
    assert {plan_of(r).precision for r in rows} == {"awq-gemm"}
    assert {r.gpu for r in rows} == {"a100-sxm-80gb"}


def test_issue276_fp16_rows_run_transformers_and_gemm_rows_the_fused_modules():
    # benchmark.py --pretrained loads the fp16 model in transformers; the GEMM checkpoint runs AutoAWQ's fused modules
    rows = rows_of("autoawq-issue276-a100.yaml")
    assert len(rows) == 8 * 2 + 3 * 2  # GEMM 32-4096 whole, FP16 cut after 128 in the stored copy
    plans = {r.id: plan_of(r) for r in rows}
    for r in rows:
        expected = ("autoawq", "awq-gemm") if "-gemm-" in r.id else ("pytorch-eager", "fp16")
        assert (plans[r.id].runtime, plans[r.id].precision) == expected, r.id
    assert sorted(r.prompt_tokens for r in rows if "-fp16-" in r.id and r.regime == "decode") == [32, 64, 128]
