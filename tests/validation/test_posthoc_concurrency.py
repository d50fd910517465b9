"""A post-hoc condition may set a serving row's concurrency (validation/serving/posthoc.yaml `concurrency`): a client
that kept fewer requests in flight than it was told to (llmperf's Trelis fork: 64 threads, each starting its own Ray
actor after the clock starts, so the 64 requests do not arrive at once)."""

from planner.inputs.facts import load_facts
from planner.validation.serving_first import load_rows, predict
from planner.validation.serving_rescore import with_posthoc
from tests.fixtures.posthoc import posthoc_from

ROWS = """schema_version: 1
rows:
  - {id: burst-ttft, source: "src-a page", model: llama-3-8b, gpu: h100-sxm, runtime: sglang, tp: 1,
     input_tokens: 500, output_tokens: 150, metric: ttft_median_ms, concurrency: 64, requests: 64, precision: bf16}
  - {id: burst-tps, source: "src-a page", model: llama-3-8b, gpu: h100-sxm, runtime: sglang, tp: 1,
     input_tokens: 500, output_tokens: 150, metric: output_tokens_per_s, concurrency: 64, requests: 64,
     precision: bf16}
"""


def test_fewer_in_flight_means_shorter_ttft_and_fewer_tokens_per_second(tmp_path):
    """64 prompts of 500 tokens sent at once queue 32,000 prefill tokens, so the median request waits for about half
    of them; 16 in flight queue at most 8,000 before a request's first token, so its TTFT is shorter. Decode is
    weight-bound on an H100 at these batches (16 GB of bf16 weights per step), so 16 sequences a step make fewer
    tokens per second than 64: both metrics fall."""
    rows = tmp_path / "rows.yaml"
    rows.write_text(ROWS)
    ttft, tps = load_rows(rows)
    cond = posthoc_from(tmp_path, "  - {rows: 'burst-*', concurrency: 16, why: client kept 16 in flight}\n")
    few_ttft, few_tps = (with_posthoc(r, cond) for r in (ttft, tps))
    assert (ttft.concurrency, few_ttft.concurrency, few_tps.concurrency) == (64, 16, 16)
    facts = load_facts()
    assert predict(few_ttft, facts) < predict(ttft, facts)
    assert predict(few_tps, facts) < predict(tps, facts)
