"""The source s46-f8 wrote before its values loads and maps as its header says (no row is estimated here)."""

from planner.validation.loso import source_of
from tests.fixtures.to_predict import planned_rows

AWS_T4 = "aws-samples-llamacpp-t4-batched-bench.yaml"


def test_aws_t4_rows_are_every_batched_bench_table_row_twice():
    pairs = planned_rows(AWS_T4)
    # tables: 7B F16 PP512 (B 1-2); 7B Q4_K_M and Q8_0 at PP512 and PP1024 (B 1-4 each); 13B Q4_K_M PP512 (B 1-4)
    configs = {(r.model, r.precision, r.prompt_tokens, r.batch) for r, _ in pairs}
    assert len(configs) == 2 + 4 * 4 + 4 == 22
    assert len(pairs) == 2 * 22  # each table row: one prefill row (S_PP), one decode latency row (T)
    assert {p.runtime for _, p in pairs} == {"llama.cpp"}
    assert all(p.gpus == 1 and r.gpu == "t4" for r, p in pairs)
    prefill = [r for r, _ in pairs if r.regime == "prefill"]
    decode = [r for r, _ in pairs if r.regime == "decode"]
    assert len(prefill) == len(decode) == 22
    assert all(r.metric == "tokens_per_s" and r.gen_tokens == 0 for r in prefill)
    # batched-bench generates as many tokens as the prompt has (PP = TG in every table of the file)
    assert all(r.metric == "step_seconds" and r.gen_tokens == r.prompt_tokens for r in decode)


def test_aws_t4_bits_are_the_readme_file_sizes():
    # GB x 8 / params, by hand: 4.08e9 x 8 / 6.738e9 = 4.84; 7.16e9 x 8 / 6.738e9 = 8.50;
    # 7.87e9 x 8 / 13.016e9 = 4.84; 13.48e9 x 8 / 6.738e9 = 16.0
    bits = {(r.model, r.precision): r.weight_bits for r, _ in planned_rows(AWS_T4)}
    assert bits == {("llama-2-7b", "fp16"): 16.0, ("llama-2-7b", "q8_0"): 8.5, ("llama-2-7b", "q4_k_m"): 4.84,
                    ("llama-2-13b", "q4_k_m"): 4.84}


def test_aws_t4_is_a_publication_of_its_own():
    assert {source_of(r) for r, _ in planned_rows(AWS_T4)} == {"aws-samples/optimizing-llm-inference-with-quantization"}


# s46-f8's v0.9.0 files were merged into s46-f9's, which holds the same runs plus GPT-J 6B and Falcon-180B
TRT_090 = "trtllm-v090-perf-four-gpus.yaml"
F8_MODELS = {"mistral-7b", "mixtral-8x7b", "llama-2-7b", "llama-2-70b"}


def test_trtllm_090_rows_are_the_low_latency_tables_at_the_printed_tp():
    pairs = [(r, p) for r, p in planned_rows(TRT_090) if r.model in F8_MODELS and r.regime == "prefill"]
    assert len(pairs) == 4 * 4 * 2  # 4 GPU tables x 4 planner models x 2 prompt lengths
    assert all(r.regime == "prefill" and r.batch == 1 and r.metric == "step_seconds" for r, _ in pairs)
    assert {p.runtime for _, p in pairs} == {"tensorrt-llm"}
    # the TP column -> tensor-parallel GPUs; Llama-2-70B on H100 runs TP 4 at 128 tokens and TP 8 at 2,048
    tp = {(r.gpu, r.model, r.prompt_tokens): p.gpus for r, p in pairs}
    assert tp[("h100-sxm", "llama-2-70b", 128)] == 4 and tp[("h100-sxm", "llama-2-70b", 2048)] == 8
    assert tp[("l40s", "llama-2-70b", 128)] == 8 and tp[("l40s", "llama-2-70b", 2048)] == 4
    assert tp[("l40s", "mixtral-8x7b", 128)] == 4
    # FP8 tables on Hopper and Ada, FP16 on the A100
    assert {r.precision for r, _ in pairs if r.gpu == "a100-sxm-80gb"} == {"fp16"}
    assert {r.precision for r, _ in pairs if r.gpu != "a100-sxm-80gb"} == {"fp8"}




def test_trtllm_090_throughput_rows_are_whole_batches_over_all_tp_gpus():
    pairs = [(r, p) for r, p in planned_rows(TRT_090) if r.model in F8_MODELS and r.regime == "decode"]
    assert len(pairs) == 4 * 4 * 4  # 4 GPU tables x 4 planner models x 4 (input, output) pairs
    assert {(r.prompt_tokens, r.gen_tokens) for r, _ in pairs} == {(128, 128), (128, 2048), (2048, 128), (2048, 2048)}
    assert all(r.regime == "decode" and r.metric == "tokens_per_s" for r, _ in pairs)
    assert all(p.runtime == "tensorrt-llm" and p.gpus == r.gpus for r, p in pairs)
    sizes = {(r.gpu, r.model, r.prompt_tokens, r.gen_tokens): (r.batch, r.gpus) for r, _ in pairs}
    assert sizes[("a100-sxm-80gb", "llama-2-70b", 128, 2048)] == (512, 8)
    assert sizes[("h200-sxm", "llama-2-70b", 128, 128)] == (1024, 1)
