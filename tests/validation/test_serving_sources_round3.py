"""Serving sources of round 3, written before their values (branch srv-round3, validation/serving/to_predict/):
each file loads as planner.validation.serving_first reads it, names what the planner has, and its rows carry the
conditions their sources state."""

from __future__ import annotations

from planner import ROOT_DIR
from planner.inputs.catalog import load_catalog
from planner.inputs.serving_runtimes import load_schedulers
from planner.validation.measured import validation_models
from planner.validation.serving_first import load_rows

SERVING = ROOT_DIR / "validation" / "serving" / "to_predict"
LAMBDA = SERVING / "lambda-vllm054-burst320.yaml"


def test_round3_rows_name_a_model_gpu_and_scheduler_the_planner_has():
    models, catalog, schedulers = validation_models(), load_catalog(), load_schedulers()
    for path in (LAMBDA,):
        for row in load_rows(path):
            models.get(row.model)
            catalog.get(row.gpu)
            schedulers.get(row.runtime)


def test_lambda_rows_are_bursts_of_320_under_vllm_054():
    rows = load_rows(LAMBDA)
    # 4 models x 8 GPU counts, less Mixtral on one A100 and one H100 (N/A in the table)
    assert len(rows) == 30
    assert all(r.metric == "saturation_output_tokens_per_s" and r.requests == 320 and r.engine == "v0-sync"
               for r in rows)
    # vLLM 0.5.4 without chunked prefill at max_model_len <= 2,048: max(max_model_len, 2048) tokens a step
    assert {(r.token_budget, r.chunked_prefill, r.max_num_seqs) for r in rows} == {(2048, False, 1024)}
    assert {r.tp for r in rows} == {1, 2, 4, 8}
    assert not [r for r in rows if r.model == "mixtral-8x7b" and r.tp == 1]
    # the seed-0 320-prompt ShareGPT sample: 65,578 Llama-3 tokens / 320 = 204.9 -> 205; 73,671 Mistral tokens / 320
    # = 230.2 -> 230
    assert {r.model: r.input_tokens for r in rows} == {"llama-3-8b": 205, "llama-3-70b": 205, "mistral-7b": 230,
                                                       "mixtral-8x7b": 230}
    # FP8 checkpoints for the Llama rows (weight-only FP8-Marlin on the A100s), bf16 for the Mistral ones
    assert {(r.model, r.precision) for r in rows} == {("llama-3-8b", "fp8"), ("llama-3-70b", "fp8"),
                                                      ("mistral-7b", "bf16"), ("mixtral-8x7b", "bf16")}
