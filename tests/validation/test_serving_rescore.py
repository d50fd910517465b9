"""The serving rows' secondary re-score: conditions read after predicting apply by row id, never to the committed
predictions, and each needs its reason."""

from dataclasses import replace

import pytest

from planner.base.schema import DataFileError
from planner.engine.serving_sim import MAX_REQUESTS
from planner.inputs.facts import load_facts
from planner.validation.serving_first import load_rows, predict
from planner.validation.serving_rescore import with_posthoc
from tests.fixtures.posthoc import posthoc_from

ROWS = """schema_version: 1
rows:
  - {id: vllm-rps4-ttft, source: "src-a page", model: llama-3-8b, gpu: a100-sxm-80gb, runtime: vllm, tp: 1,
     input_tokens: 220, output_tokens: 200, metric: ttft_median_ms, rate: 4.0%s}
"""


def test_a_posthoc_condition_applies_to_the_rows_its_pattern_names(tmp_path):
    rows = tmp_path / "rows.yaml"
    rows.write_text(ROWS % "")
    [row] = load_rows(rows)
    assert (row.kv_dtype, row.scheduler_steps, row.lengths) == (None, 1, "fixed")
    posthoc = posthoc_from(tmp_path, "  - {rows: 'vllm-*', scheduler_steps: 10, why: the README's notes}\n"
                                 "  - {rows: 'sglang-*', kv_dtype: fp8, why: another source}\n")
    late = with_posthoc(row, posthoc)
    assert (late.kv_dtype, late.scheduler_steps, late.lengths, late.host_overlap) == (None, 10, "fixed", None)
    older = with_posthoc(row, posthoc_from(tmp_path, "  - {rows: '*-ttft', host_overlap: false, why: a version}\n"))
    assert older.host_overlap is False and older.scheduler_steps == 1


def test_a_posthoc_entry_needs_a_reason_and_a_condition(tmp_path):
    with pytest.raises(DataFileError, match="why"):
        posthoc_from(tmp_path, "  - {rows: 'a*', kv_dtype: fp8}\n")
    with pytest.raises(DataFileError, match="at least one"):
        posthoc_from(tmp_path, "  - {rows: 'a*', why: nothing}\n")
    with pytest.raises(DataFileError, match="lengths"):
        posthoc_from(tmp_path, "  - {rows: 'a*', lengths: zipf, why: x}\n")


def test_ten_steps_a_round_delay_the_first_token(tmp_path):
    """At 4 requests/s on an A100 most requests arrive during a decode round: with 10 steps a round they wait for
    its end, on average several decode steps (~12 ms each here) more than with one step a round."""
    rows = tmp_path / "rows.yaml"
    rows.write_text(ROWS % ", scheduler_steps: 10")
    [late] = load_rows(rows)
    rows.write_text(ROWS % "")
    [row] = load_rows(rows)
    facts = load_facts()
    assert predict(late, facts) - predict(row, facts) > 3 * 12


def test_an_fp8_kv_row_fits_more_requests_at_saturation(tmp_path):
    """Llama-3-8B (fp8 weights, ~8 GB) on an 80 GiB H100 under TensorRT-LLM, 128 + 2,048 tokens a request: 0.9 x
    85.9 GB less ~11 GB of weights, activations and context leaves ~66 GB, a bf16 cache of ~500,000 tokens (131 kB
    each), ~230 requests, under the 256 cap; an fp8 one holds all 256 and reads half the bytes a step, so the
    saturated throughput rises by well over a tenth."""
    rows = tmp_path / "rows.yaml"
    rows.write_text("""schema_version: 1
rows:
  - {id: sat, source: "src-b page", model: llama-3-8b, gpu: h100-sxm, runtime: tensorrt-llm, tp: 1,
     input_tokens: 128, output_tokens: 2048, metric: saturation_output_tokens_per_s, precision: fp8}
""")
    [bf16] = load_rows(rows)
    fp8 = with_posthoc(bf16, posthoc_from(tmp_path, "  - {rows: sat, kv_dtype: fp8, why: the checkpoint}\n"))
    facts = load_facts()
    assert predict(fp8, facts) > 1.1 * predict(bf16, facts)


def test_a_benchmarks_request_count_applies_by_row_and_is_checked(tmp_path):
    rows = tmp_path / "rows.yaml"
    rows.write_text(ROWS % "")
    [row] = load_rows(rows)
    assert row.requests is None
    late = with_posthoc(row, posthoc_from(tmp_path, "  - {rows: 'vllm-*', requests: 200, why: --num-prompts 200}\n"))
    assert late.requests == 200
    for bad in ("0", str(MAX_REQUESTS + 1), "1.5"):
        with pytest.raises(DataFileError, match="requests"):
            posthoc_from(tmp_path, f"  - {{rows: 'a*', requests: {bad}, why: x}}\n")


def test_a_concurrency_row_takes_simulation_conditions_only_with_its_request_count(tmp_path):
    """With a request count a concurrency row is the client's finite closed loop (serving_sim.closed_loop), which
    takes the simulation's conditions; without one, the steady concurrency, which has no engine to name."""
    rows = tmp_path / "rows.yaml"
    rows.write_text(ROWS.replace("rate: 4.0", "concurrency: 4") % ", engine: v0")
    [row] = load_rows(rows)
    with pytest.raises(ValueError, match="requests"):
        predict(row, load_facts())
    assert predict(replace(row, requests=100), load_facts()) > 0


def test_an_unstreamed_reply_is_timed_to_its_last_token(tmp_path):
    """A client that reads each reply whole sees its 'first token' with the last: at 0.05 requests/s every request
    runs alone, so that time is the streamed TTFT plus the other 199 tokens at the streamed TPOT each."""
    rows = tmp_path / "rows.yaml"
    rows.write_text((ROWS % ", requests: 20").replace("rate: 4.0", "rate: 0.05"))
    [row] = load_rows(rows)
    facts = load_facts()
    ttft = predict(row, facts)
    tpot = predict(replace(row, metric="tpot_median_ms"), facts)
    late = with_posthoc(row, posthoc_from(tmp_path, "  - {rows: '*-ttft', streamed: false, why: whole replies}\n"))
    assert late.streamed is False
    assert predict(late, facts) == pytest.approx(ttft + 199 * tpot, rel=0.01)
    assert predict(replace(late, metric="tpot_median_ms"), facts) == pytest.approx(tpot)


def test_a_posthoc_output_length_is_checked_and_applied(tmp_path):
    rows = tmp_path / "rows.yaml"
    rows.write_text(ROWS % "")
    [row] = load_rows(rows)
    late = with_posthoc(row, posthoc_from(tmp_path, "  - {rows: 'vllm-*', output_tokens: 128, why: max_tokens}\n"))
    assert (late.output_tokens, late.input_tokens) == (128, 220)
    with pytest.raises(DataFileError, match="output_tokens"):
        posthoc_from(tmp_path, "  - {rows: 'a*', output_tokens: 1, why: x}\n")
    with pytest.raises(DataFileError, match="streamed"):
        posthoc_from(tmp_path, "  - {rows: 'a*', streamed: maybe, why: x}\n")


def test_a_cached_prefix_shortens_a_long_prompts_first_token_only_where_the_engine_caches(tmp_path):
    """4,000-token identical prompts at 0.05 requests/s on an A100 under vLLM: uncached, 2 x 8e9 x 4,000 = 64 TFLOP of
    prefill, over 0.2 s at the 312 TFLOP/s peak; cached, 3,984 tokens reused and 16 computed, one step a little over
    the weight read (16 GB at 2 TB/s, ~8 ms). TensorRT-LLM has no prefix cache modelled: refused, naming the field."""
    rows = tmp_path / "rows.yaml"
    rows.write_text((ROWS % ", requests: 20").replace("rate: 4.0", "rate: 0.05").replace("220", "4000"))
    [row] = load_rows(rows)
    facts = load_facts()
    late = with_posthoc(row, posthoc_from(tmp_path, "  - {rows: 'vllm-*', cached_prefix_tokens: 4000, why: same}\n"))
    assert predict(row, facts) > 200 and predict(late, facts) < 0.25 * predict(row, facts)
    with pytest.raises(ValueError, match="cached_prefix_tokens"):
        predict(replace(late, runtime="tensorrt-llm"), facts)
