"""Two sources written before their values (validation/README.md 133-134): FasterTransformer's BERT and ViT guides.
Each file's rows become the plans the guides describe; expected figures come from the guides' tables and scripts,
derived by hand in the comments."""

from __future__ import annotations

from collections import Counter

from tests.fixtures.to_predict import planned_rows

BERT = "ft-bert-guide-pytorch.yaml"
VIT = "ft-vit-guide-t4-a100.yaml"


def test_bert_rows_are_the_pytorch_tables_full_grids():
    pairs = planned_rows(BERT)
    # PyTorch tables: A100 TF32/FP16/INT8-v1, A10 and T4 FP32/FP16/INT8-v1, V100 FP32/FP16 = 11 tables of
    # pyt_benchmark.sh's 'for batch_size in 1 8 32; for seq_len in 32 128 384' = 9 cells each
    assert len(pairs) == 11 * 9
    per_gpu = Counter(row.gpu for row, _ in pairs)
    assert per_gpu == {"a100-sxm-80gb": 27, "a10": 27, "t4": 27, "v100-sxm2-16gb": 18}
    grids = Counter((row.gpu, row.precision) for row, _ in pairs)
    assert set(grids.values()) == {9}
    assert ("v100-sxm2-16gb", "int8-w8a8") not in grids  # the guide has no V100 INT8 table
    for row, plan in pairs:
        assert plan.runtime == "fastertransformer", row.id
        assert row.model == "bert-base-squad" and row.regime == "prefill", row.id
        assert (row.batch, row.prompt_tokens) in {(b, s) for b in (1, 8, 32) for s in (32, 128, 384)}, row.id
        assert plan.batch == row.batch, row.id


def test_vit_rows_carry_each_images_token_count_and_engine():
    pairs = planned_rows(VIT)
    # per GPU: FP32 and FP16 tables x (torch, cpp) x batch 1/8/16/32 = 16, plus three FP16 columns x 4 batches = 12
    assert len(pairs) == 2 * (16 + 12)
    for row, plan in pairs:
        # patches of 16 px plus the class token: (384/16)^2 + 1 = 577, (224/16)^2 + 1 = 197
        side = 384 if row.model.endswith("-384") else 224
        assert row.prompt_tokens == (side // 16) ** 2 + 1, row.id
        assert plan.runtime == ("pytorch-eager" if "-torch-" in row.id else "fastertransformer"), row.id
        assert row.batch in (1, 8, 16, 32) and plan.batch == row.batch, row.id


def test_zerollama_rows_pair_a_prefill_and_a_decode_for_each_method():
    pairs = planned_rows("zerollama-qwen15-rtx4090.yaml")
    # five sizes x (8 GGUF + bf16 + bnb int8 + bnb 4-bit + GPTQ + AWQ + AWQ fused = 14 methods) x 2 cells, less the
    # 14B bf16 row (28 GB of bf16 weights do not fit the 24 GB card: 'oom' in the table)
    assert len(pairs) == (5 * 14 - 1) * 2
    kinds = Counter(row.regime for row, _ in pairs)
    assert kinds == {"prefill": 69, "decode": 69}
    for row, plan in pairs:
        assert (row.gpu, row.batch, row.prompt_tokens) == ("rtx-4090", 1, 25), row.id
        runtime = {"llama.cpp": "llama.cpp", "autoawq": "autoawq"}.get(row.framework, "pytorch-eager")
        assert plan.runtime == runtime, row.id
