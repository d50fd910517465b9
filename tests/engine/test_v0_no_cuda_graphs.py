"""vLLM before 0.2.6 captured no CUDA graph (data/serving.yaml vllm engines 'v0-nograph', eager_decode: PR #1926
brought decode graphs in 2023-12): every decode step is dispatched kernel by kernel from Python, at the eager prefill's
per-kernel cost. Expected figures are derived by hand from flat phases and the data file; Splitwise's rows, whose
vLLM branch predates the release, take the generation through validation/conditions_read_after.yaml
(refines_assumed)."""

import pytest

from planner.base.schema import DataFileError
from planner.engine.phases import Phase
from planner.engine.roofline import eager_steps, pass_seconds
from planner.inputs.catalog import load_catalog
from planner.inputs.runtimes import Efficiency
from planner.inputs.serving_runtimes import load_schedulers
from planner.validation.measured import as_known_now, eager_decode_from, load_measurements
from tests.fixtures.serving_engine import ENGINE_YAML

GPU = load_catalog().get("h100-sxm")


def vllm_first_position() -> int:
    return load_schedulers().get("vllm").eager_decode_from("v0-nograph")


def test_the_data_file_gives_pre_graph_vllm_an_eager_decode_and_v0_sync_its_8192_limit():
    """'v0-nograph' decodes eagerly from the first KV position on; 'v0-sync' only past max_seq_len_to_capture
    (8,192); both run the synchronous loop's 1.9 ms and 90 us a sequence a step."""
    vllm = load_schedulers().get("vllm")
    assert vllm.eager_decode_from("v0-nograph") == 1
    assert eager_decode_from("vllm", "v0-sync") == 8192
    assert (vllm.step_host_us("v0-nograph"), vllm.host_us_per_seq("v0-nograph")) == (1900.0, 90.0)
    assert vllm.eager_prefill("v0-nograph")


def test_a_pre_graph_decode_of_short_kernels_is_host_bound_at_any_context():
    """300 kernels a step at 1.5 us of GPU gap each, 20 us a kernel from Python: 10 steps after a 512-token prompt
    take 10 x 300 x 20 us = 60 ms eagerly (all 10 eager), against 10 x 300 x 1.5 us = 4.5 ms replayed as a graph."""
    nograph = Efficiency(0.8, 0.9, 1.5, 1.0, 1.0, "test", prefill_host_us_per_kernel=20.0,
                         eager_decode_from=vllm_first_position())
    short = Phase("decode", (), 300.0, 10, 512, 1.0)
    assert eager_steps(short, nograph) == 10
    assert pass_seconds(short, GPU, nograph) == pytest.approx(10 * 300 * 20e-6)
    graphed = Efficiency(0.8, 0.9, 1.5, 1.0, 1.0, "test", prefill_host_us_per_kernel=20.0, eager_decode_from=8192)
    assert pass_seconds(short, GPU, graphed) == pytest.approx(10 * 300 * 1.5e-6)



def test_splitwise_rows_take_the_pre_graph_generation_and_others_keep_theirs():
    """A Splitwise row states engine v0-sync (assumed); the entry read after replaces it (refines_assumed). A row
    whose own engine is stated keeps it where no entry refines it (Qwen2's vLLM 0.4.2 rows: v0-sync)."""
    rows = {r.id: r for r in load_measurements()}
    split = rows["splitwise-llama-2-70b-fp16-h100sxm-tp8-b1-p512-g128-decode"]
    assert split.engine == "v0-sync"
    assert as_known_now(split).engine == "v0-nograph"
    qwen = rows["qwen2sb-7b-bf16-a100sxm80-vllm-in1-g2048"]
    assert as_known_now(qwen).engine == "v0-sync"


def test_eager_decode_must_be_a_yes_or_no(tmp_path):
    ok = tmp_path / "ok.yaml"
    ok.write_text(ENGINE_YAML + "    engines: {old: {host_us_per_seq: 90, eager_decode: true}}\n"
                                "    engines_source: a profile\n")
    assert load_schedulers(ok).get("eng").eager_decode_from("old") == 1
    bad = tmp_path / "bad.yaml"
    bad.write_text(ENGINE_YAML + "    engines: {old: {host_us_per_seq: 90, eager_decode: 1}}\n"
                                 "    engines_source: a profile\n")
    with pytest.raises(DataFileError, match="engines"):
        load_schedulers(bad)
