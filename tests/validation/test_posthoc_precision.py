"""A post-hoc condition may set a serving row's precision (validation/serving/posthoc.yaml `precision`): Meta's FP8
405B rows run fp8-mlp, attention's projections at 2 bytes."""

from planner.inputs.facts import load_facts
from planner.validation.serving_first import load_rows, predict
from planner.validation.serving_rescore import load_posthoc, with_posthoc

ROWS = """schema_version: 1
rows:
  - {id: meta-fp8-tpot, source: "src-a page", model: llama-3-8b, gpu: h100-sxm, runtime: vllm, tp: 1,
     input_tokens: 100, output_tokens: 64, metric: tpot_median_ms, rate: 1, precision: fp8, requests: 1}
"""


def test_a_lone_requests_tpot_grows_with_attentions_bf16_bytes(tmp_path):
    """A lone request's decode step reads every weight once: fp8 stores 9.08 GB of Llama 3 8B, fp8-mlp 10.42 GB
    (tests/inputs/test_fp8_mlp_scope.py's counts, on one GPU), so its TPOT grows, by less than 10.42 / 9.08 = 1.148
    (the KV cache, the step's host time and the launch gaps do not grow)."""
    rows = tmp_path / "rows.yaml"
    rows.write_text(ROWS)
    [row] = load_rows(rows)
    p = tmp_path / "posthoc.yaml"
    p.write_text("schema_version: 1\nconditions:\n  - {rows: 'meta-*', precision: fp8-mlp, why: Meta's checkpoint}\n")
    meta = with_posthoc(row, load_posthoc(p))
    assert (row.precision, meta.precision) == ("fp8", "fp8-mlp")
    facts = load_facts()
    ratio = predict(meta, facts) / predict(row, facts)
    assert 1.0 < ratio < 10.42 / 9.08
