"""Two sources written before their values (validation/README.md 114-115): each file's rows become the plans and the
serving runs their sources describe. Expected figures come from the sources' scripts, derived by hand in comments."""

from __future__ import annotations

from planner import ROOT_DIR
from planner.validation.measured import validation_models
from planner.validation.serving_first import load_rows
from tests.fixtures.to_predict import planned_rows

OLMO = "olmo-core-h100-training.yaml"
LDSINGH = ROOT_DIR / "validation" / "serving" / "to_predict" / "ldsingh-vllm023-rtxa6000-qwen25-7b.yaml"


def _multiple_of(n: int, m: int) -> int:
    return m * ((n + m - 1) // m)


def test_olmo_core_ffn_widths_follow_llama_like_rule():
    # olmo_core TransformerConfig.llama_like @7e58d128: hidden = int(8 x d_model / 3), x hidden_size_multiplier if
    # given, rounded up to hidden_size_multiple_of (256, or 1024 for llama3_8B): 1B 5461 -> 5632; 7B 10922 -> 11008;
    # 13B 13653 -> 13824; Llama3-8B int(1.3 x 10922) = 14198 -> 14336
    models = validation_models()
    expected = {"olmo-core-olmo2-1b": (2048, None, 256, 5632), "olmo-core-olmo2-7b": (4096, None, 256, 11008),
                "olmo-core-olmo2-13b": (5120, None, 256, 13824), "olmo-core-llama3-8b": (4096, 1.3, 1024, 14336)}
    for key, (d_model, mult, multiple, ffn) in expected.items():
        hidden = int(8 * d_model / 3)
        if mult is not None:
            hidden = int(mult * hidden)
        assert _multiple_of(hidden, multiple) == ffn
        model = models.get(key)
        assert (model.hidden, model.ffn) == (d_model, ffn), key
        # dolma2 tokenizer: vocab 100278 padded to a multiple of 128 (TokenizerConfig.padded_vocab_size)
        assert model.vocab == _multiple_of(100278, 128) == 100352, key


def test_olmo_core_rows_plan_fsdp_compile_with_the_scripts_batches():
    pairs = planned_rows(OLMO)
    assert len(pairs) == 8  # 4 models x (BF16, BF16/FP8)
    # rank_microbatch_size in tokens / 4096 and global_batch_size in tokens / 4096, per script
    micro = {"olmo2-1b": 8, "olmo2-7b": 2, "llama3-8b": 2, "olmo2-13b": 1}
    global_seqs = {"olmo2-1b": 1024, "olmo2-7b": 1024, "llama3-8b": 1024, "olmo2-13b": 2048}
    for row, plan in pairs:
        name = row.id.split("-")[1] + "-" + row.id.split("-")[2]
        assert plan.runtime == "torch-compile", row.id
        assert plan.workload.sharding == "fsdp", row.id
        assert (row.gpus, row.seq_len) == (8, 4096), row.id
        assert row.micro_batch == micro[name] and row.batch == global_seqs[name], row.id
        # 1B: 1024 / (8 x 8) = 16 micro-steps; 7B/8B: 1024 / (2 x 8) = 64; 13B: 2048 / (1 x 8) = 256
        assert row.grad_accum == {"olmo2-1b": 16, "olmo2-7b": 64, "llama3-8b": 64, "olmo2-13b": 256}[name], row.id
        assert (row.precision == "fp8") == row.id.endswith("-fp8-h100-x8"), row.id


def test_ldsingh_rows_are_the_harness_closed_loops():
    rows = load_rows(LDSINGH)
    assert len(rows) == 24  # 8 levels x (TTFT, TPOT, output tokens/s)
    by_level = {}
    for row in rows:
        by_level.setdefault(row.concurrency, set()).add(row.metric)
        # loadgen.py sends max(requests_per_level, concurrency): 12 (run-bench.sh) below 12, 512 at 64-512
        assert row.requests == (12 if row.concurrency <= 8 else 512), row.id
        assert (row.gpu, row.model, row.runtime, row.engine, row.tp) == ("rtx-a6000", "qwen2-7b", "vllm", "v1", 1)
        # replies end at EOS under max_tokens 128: the table's median 'gen' of 51-53 chunks
        assert 51 <= row.output_tokens <= 53 < 128, row.id
    assert sorted(by_level) == [1, 2, 4, 8, 64, 128, 256, 512]
    assert all(m == {"ttft_median_ms", "tpot_median_ms", "output_tokens_per_s"} for m in by_level.values())


def test_xtuner_rows_are_one_packed_sequence_per_gpu_with_full_sharding():
    pairs = planned_rows("xtuner-speed-benchmark-a100.yaml")
    assert len(pairs) == 4  # the sequence_parallel_size 1 rows of the page's three tables
    for row, plan in pairs:
        # '# bs = N gpus * 1 batch_size_per_device * 1 acc / 1 sequence parallel': one packed sequence a GPU a step
        assert (row.micro_batch, row.grad_accum, row.batch) == (1, 1, row.gpus), row.id
        assert plan.runtime == "pytorch-eager" and plan.workload.sharding == "fsdp", row.id
        assert row.checkpointing, row.id  # SupervisedFinetune(use_activation_checkpointing=True) by default
    # Yi-34B: 60 layers of 7168 with 56 query heads of 128 and 8 KV heads (config.json)
    yi = validation_models().get("yi-34b-200k")
    assert yi.hidden // yi.heads == 128 and (yi.layers, yi.kv_heads, yi.ffn) == (60, 8, 20480)
