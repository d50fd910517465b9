"""The third set of sources written before their values (validation/to_predict/, validation/serving/to_predict/): each
file loads as the predictors read it, and its rows carry the conditions their sources state."""

from __future__ import annotations

from planner import ROOT_DIR
from planner.inputs.facts import load_facts
from planner.inputs.models import load_models
from planner.validation.loso import source_of
from planner.validation.measured import load_measurements, plan_for, validation_models
from planner.validation.serving_first import load_rows

TO_PREDICT = ROOT_DIR / "validation" / "to_predict"
SERVING = ROOT_DIR / "validation" / "serving" / "to_predict"


def test_argonne_rows_are_vllm_batches_whose_input_length_is_the_output_length():
    rows = load_measurements(TO_PREDICT / "argonne-llm-inference-bench.yaml", measured=False)
    assert {source_of(r) for r in rows} == {"argonne-lcf/LLM-Inference-Bench"}
    decode = [r for r in rows if r.regime == "decode"]
    # the run scripts pass --input-len = --output-len = the csv's 'Input Output Length'; the rows keep 128 and 2048
    assert all(r.prompt_tokens == r.gen_tokens and r.prompt_tokens in (128, 2048) for r in decode)
    assert {r.batch for r in decode} == {1, 16, 64}
    # Polaris nodes hold four A100 40GB, the JLSE H100 nodes four: tensor parallel 1, 2 or 4
    assert {(r.gpu, r.gpus) for r in rows} == {(g, n) for g in ("a100-sxm-40gb", "h100-sxm") for n in (1, 2, 4)}
    # the TTFT file's vLLM runs on these GPUs: batch 16 of 1024-token prompts, one GPU
    prefill = [r for r in rows if r.regime == "prefill"]
    assert len(prefill) == 6 and {(r.batch, r.prompt_tokens, r.gpus) for r in prefill} == {(16, 1024, 1)}
    assert all(r.metric == "step_seconds" and r.framework == "vllm" for r in rows)


def test_argonne_multi_gpu_rows_plan_tensor_parallel_vllm():
    rows = [r for r in load_measurements(TO_PREDICT / "argonne-llm-inference-bench.yaml", measured=False)
            if r.gpus > 1][:3]
    models, rules = validation_models(), load_facts().rules
    for row in rows:
        plan, _, _ = plan_for(row, models, rules)
        assert (plan.runtime, plan.gpus, plan.parallel) == ("vllm", row.gpus, "tensor")


def serving_rows(stem: str):
    """A serving source's rows: the main file and its rows whose model only validation/models_extra.yaml has."""
    return load_rows(SERVING / f"{stem}.yaml") + load_rows(SERVING / f"{stem}-extra-models.yaml")


def test_serving_files_split_by_where_the_model_is():
    # planner.validation.serving_first plans a serving row with load_models(): the main files name only its models
    presets = {m.id for m in load_models().models}
    for stem in ("iog-vllm085-serving", "gpustack-performance-lab"):
        assert {r.model for r in load_rows(SERVING / f"{stem}.yaml")} <= presets
        assert not {r.model for r in load_rows(SERVING / f"{stem}-extra-models.yaml")} & presets


def test_iog_rows_are_three_metrics_of_each_poisson_run():
    rows = serving_rows("iog-vllm085-serving")
    runs = {r.id.rsplit("-", 1)[0] for r in rows}
    assert len(rows) == 3 * len(runs)
    assert {r.rate for r in rows} == {1.0, 4.0, 8.0, 16.0, 32.0} and all(r.concurrency is None for r in rows)
    assert all(r.runtime == "vllm" and r.lengths == "sharegpt" for r in rows)
    # the RTX 4090 machines ran tensor parallel over 1, 2 or 4 cards; the H100 PCIe ones over 1 or 2
    assert {(r.gpu, r.tp) for r in rows} == {("rtx-4090", 1), ("rtx-4090", 2), ("rtx-4090", 4), ("h100-pcie", 1),
                                             ("h100-pcie", 2)}
    # Meta-Llama-3-8B-Instruct at 1 request/s on one H100 PCIe: total_input_tokens 41169 and total_output_tokens
    # 40344 over 200 prompts -> means 205.8 and 201.7
    row = next(r for r in rows if r.id == "iog-meta-llama-3-8b-instruct-h100pcie-x1-qps1-ttft")
    assert (row.input_tokens, row.output_tokens) == (206, 202)


def test_gpustack_rows_express_the_servers_flags():
    rows = serving_rows("gpustack-performance-lab")
    oss = [r for r in rows if r.model.startswith("gpt-oss")]
    assert all(r.precision == "mxfp4" for r in oss) and {r.model for r in oss} == {"gpt-oss-20b", "gpt-oss-120b"}
    # --async-scheduling is the only setting that overlaps vLLM's host work with the GPU step
    assert all((r.host_overlap is True) == ("-async-" in r.id) for r in rows)
    # the 32K case: --random-input-len 32000 for each of 100 requests, 3,200,000 input tokens in all (gpt-oss)
    assert {r.input_tokens for r in oss if "rand32k" in r.id} == {32000}
    # tensor parallel only where the command sets it: the 120b on H100 at 2 and 4, on A100 at 2; DeepSeek-R1 at 8
    assert {(r.model, r.gpu, r.tp) for r in rows if r.tp > 1} == {("gpt-oss-120b", "h100-sxm", 2),
                                                                 ("gpt-oss-120b", "h100-sxm", 4),
                                                                 ("gpt-oss-120b", "a100-sxm-80gb", 2),
                                                                 ("deepseek-v3", "h200-sxm", 8)}
    assert all(r.precision == "fp8" and r.tp == 8 for r in rows if r.model == "deepseek-v3")
    # closed loops run on one GPU at fixed lengths (planner.engine.serving's concurrency model)
    closed = [r for r in rows if r.concurrency is not None]
    assert all(r.tp == 1 and r.lengths == "fixed" for r in closed)
    # Qwen3-8B: 100 ShareGPT prompts, 23,260 input and 22,061 generated tokens -> means 232.6 and 220.6
    qwen = [r for r in rows if r.model == "qwen3-8b"]
    assert {(r.input_tokens, r.output_tokens) for r in qwen} == {(233, 221)}
    assert {(r.runtime, r.concurrency) for r in qwen} == {("vllm", 1), ("vllm", 2), ("vllm", 4), ("vllm", 8),
                                                          ("sglang", 4), ("tensorrt-llm", 4)}


def test_qwen3_8b_profile_has_the_model_cards_parameter_count():
    # the model card: 8.2B parameters, 6.95B of them outside the embeddings
    m = validation_models().get("qwen3-8b")
    q_width = m.heads * m.head_dim
    per_layer = 2 * m.hidden * q_width + 2 * m.hidden * m.kv_heads * m.head_dim + 3 * m.hidden * m.ffn
    assert abs(m.layers * per_layer / 6.95e9 - 1) < 0.005
    assert abs((m.layers * per_layer + 2 * m.vocab * m.hidden) / 8.2e9 - 1) < 0.01


def test_hamel_rows_count_the_new_tokens_each_script_generates():
    rows = load_measurements(TO_PREDICT / "hamel-llama-inference.yaml", measured=False)
    hf = [r for r in rows if r.framework == "hf-transformers"]
    vllm = [r for r in rows if r.framework == "vllm"]
    assert len(hf) == len(vllm) == 8
    # transformers' generate(max_length=200) counts the prompt: every fp32 run ended at 200 tokens in all
    assert all(r.prompt_tokens + r.gen_tokens == 200 and r.precision == "fp32" for r in hf)
    # vLLM's max_tokens=200 counts generated tokens only
    assert max(r.gen_tokens for r in vllm) == 200 and all(r.precision == "fp16" for r in vllm)
    # Summary.ipynb's Llama-2 token count of 'Who does Harry turn into a balloon?' (BOS included)
    assert {r.prompt_tokens for r in rows if r.id.endswith("-q5")} == {11}
    assert {r.gpu for r in rows} == {"rtx-a6000"}
