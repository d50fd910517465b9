"""A serving row whose engine had no custom all-reduce (ServingRow.custom_allreduce false: upstream vLLM on ROCm before
PR #14125, or --disable-custom-all-reduce) pays NCCL's ring for every tensor-parallel all-reduce."""

import pytest

from planner.base.schema import DataFileError
from planner.inputs.facts import load_facts
from planner.validation.serving_first import load_rows, predict
from planner.validation.serving_rescore import with_posthoc
from tests.fixtures.posthoc import posthoc_from

ROW = """schema_version: 1
rows:
  - {id: tp8-tpot, source: "src-a page", model: llama-3-8b, gpu: h100-sxm, runtime: vllm, tp: 8,
     input_tokens: 100, output_tokens: 200, metric: tpot_median_ms, rate: 0.05, requests: 4%s}
"""


def _row(tmp_path, extra: str = ""):
    path = tmp_path / "rows.yaml"
    path.write_text(ROW % extra)
    [row] = load_rows(path)
    return row


def test_nccl_ring_costs_each_decode_step_its_latency_over_the_custom_kernel(tmp_path):
    """Llama-3-8B at tp 8 on H100s, one request at a time (0.05 requests/s): a decode step all-reduces 8 KiB
    (4,096 x 2 bytes) twice per layer, 64 calls. vLLM's one-shot kernel (data/custom_allreduce.yaml): 3.7 + 7 x 0.3
    = 5.8 us plus 7 x 8,192 B at 0.58 x 450 GB/s = 0.22 us, 6.02 us; NCCL's LL ring over 8 GPUs
    (data/interconnects.yaml): 6.6 + 14 hops x 0.6 = 15.0 us plus 2 x 7/8 x 8,192 B at LL's rate (< 0.1 us).
    About 9.0 us more a call, 64 x 9.0 = 0.58 ms more per output token."""
    facts = load_facts()
    custom, ring = _row(tmp_path), _row(tmp_path, ", custom_allreduce: false")
    assert custom.custom_allreduce and not ring.custom_allreduce
    assert 0.55 < predict(ring, facts) - predict(custom, facts) < 0.62


def test_one_gpu_has_no_all_reduce_to_lose(tmp_path):
    facts = load_facts()
    one = (ROW % "").replace("tp: 8", "tp: 1")
    path = tmp_path / "one.yaml"
    path.write_text(one)
    [a] = load_rows(path)
    path.write_text(one.replace("requests: 4", "requests: 4, custom_allreduce: false"))
    [b] = load_rows(path)
    assert predict(a, facts) == predict(b, facts)


def test_custom_allreduce_is_a_posthoc_condition_and_a_flag(tmp_path):
    row = _row(tmp_path)
    late = with_posthoc(row, posthoc_from(tmp_path, "  - {rows: 'tp8-*', custom_allreduce: false, why: a build}\n"))
    assert late.custom_allreduce is False and row.custom_allreduce is True
    with pytest.raises(DataFileError, match="custom_allreduce"):
        posthoc_from(tmp_path, "  - {rows: 'a*', custom_allreduce: maybe, why: x}\n")
    with pytest.raises(DataFileError, match="custom_allreduce"):
        _row(tmp_path, ", custom_allreduce: 3")
