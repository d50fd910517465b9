"""MLPerf Server rows' run length (validation/serving/posthoc.yaml, read after the values): LoadGen generates Server
queries while the schedule is under the run's 600 s or the count under min_query_count (mlcommons/inference
loadgen/loadgen.cc, GenerateQueries), over the whole system; a row is one of its replicas."""

from planner.engine.serving_sim import MAX_REQUESTS
from planner.validation.serving_first import SERVING_DIR, load_rows
from planner.validation.serving_rescore import load_posthoc, with_posthoc

FILES = ("mlperf-inference-v41-llama2-70b-server.yaml", "mlperf-inference-v41-mixtral-8x7b-server.yaml")


def _late() -> dict:
    posthoc = load_posthoc()
    return {r.id: with_posthoc(r, posthoc) for f in FILES for r in load_rows(SERVING_DIR / "to_predict" / f)}


def test_each_replica_runs_its_share_of_the_loadgen_run():
    late = _late()
    # 4 x H100 NVL, 2 replicas at 20.04 samples/s: 600 s is 12,024 queries, under min_query_count 24,576: 12,288 each
    assert late["mlperf41-llama2-70b-server-asustek-esc4000a-e12-4xh100-trt-tpot"].requests == 12_288
    # NVIDIA's DGX H100, 4 replicas of TP 2 at 18.775 each (75.1 samples/s): 600 x 75.1 = 45,060 queries, 11,265 each
    for metric in ("ttft", "tpot"):
        assert late[f"mlperf41-llama2-70b-server-nvidia-dgx-h100-h100-sxm-80gbx8-trt-{metric}"].requests == 11_265
    # the Triton twin of NVIDIA's H200 result is its own entry (13.014 x 8 x 600 = 62,468 queries, 7,809 each), not
    # caught by the plain result's pattern (12.6562 x 8 x 600 = 60,750, 7,594 each)
    assert late["mlperf41-llama2-70b-server-nvidia-h200-sxm-141gbx8-trt-triton-ttft"].requests == 7_809
    assert late["mlperf41-llama2-70b-server-nvidia-h200-sxm-141gbx8-trt-ttft"].requests == 7_594


def test_mixtral_replicas_run_past_the_simulations_cap():
    """Mixtral's slowest system, 4 x H100 at 176.3 samples/s: 600 s x 176.3 / 4 = 26,445 queries a replica, over
    the simulation's cap, so every Mixtral row is entered at the cap."""
    late = _late()
    assert MAX_REQUESTS < 26_445
    assert {r.requests for r in late.values() if "mixtral" in r.id} == {MAX_REQUESTS}
