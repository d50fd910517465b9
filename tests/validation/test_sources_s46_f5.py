"""The two sources s46-f5 wrote before their values load and map as their headers say (no row is estimated here)."""

from planner.validation.loso import source_of
from tests.fixtures.to_predict import planned_rows, to_predict_rows

GUIDE = "lcpp-gpt-oss-guide-15396.yaml"
OCI = "oci-mi300x-llama31-405b-latency.yaml"


def test_gpt_oss_guide_rows_are_one_gpu_llama_cpp_at_the_files_bits():
    pairs = planned_rows(GUIDE)
    assert len(pairs) == 40  # 8 GPU/model tables x (4 pp tests + tg128)
    assert {p.runtime for _, p in pairs} == {"llama.cpp"}
    assert all(p.gpus == 1 and r.batch == 1 for r, p in pairs)
    # bits per weight = llama-bench size x 8 x 2^30 / params, by hand:
    # 11.27 x 8.590e9 / 20.91e9 = 4.630; 59.02 x 8.590e9 / 116.83e9 = 4.340
    bits = {r.model: r.weight_bits for r, _ in pairs}
    assert bits == {"gpt-oss-20b": 4.63, "gpt-oss-120b": 4.34}
    prefill = [r for r, _ in pairs if r.regime == "prefill"]
    assert sorted({r.prompt_tokens for r in prefill}) == [2048, 8192, 16384, 32768]
    assert len(prefill) == 32
    decode = [r for r, _ in pairs if r.regime == "decode"]
    assert {(r.prompt_tokens, r.gen_tokens) for r in decode} == {(0, 128)}


def test_gpt_oss_guide_is_a_publication_of_its_own():
    # not 'ggml-org/llama.cpp', whose PR threads are an older source of the set
    assert {source_of(r) for r in to_predict_rows(GUIDE)} == {"ggml-org/llama.cpp discussion #15396"}


def test_oci_rows_are_the_whole_batch_sweep_at_tensor_parallel_8():
    pairs = planned_rows(OCI)
    assert [r.batch for r, _ in pairs] == [2 ** k for k in range(9)]  # 1 ... 256
    assert all(p.gpus == 8 and p.parallel == "tensor" and p.runtime == "vllm" for _, p in pairs)
    assert all((r.prompt_tokens, r.gen_tokens, r.metric) == (128, 128, "step_seconds") for r, _ in pairs)
    assert {source_of(r) for r, _ in pairs} == {"blogs.oracle.com"}
