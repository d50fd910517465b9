"""Local benchmark: the torch model matches its profile, the KV cache is right, the CLI writes a valid result, a
calibration fitted on one model predicts another model measured on this machine's CPU within 15 %, and your own
model (`--model`) measured at several sizes is predicted at a size left out of the fit within 15 %.

On a CPU the bench runs one torch thread timed by process CPU time by default (--threads 1 --clock cpu): this 2-core
machine is shared, and wall time with two threads mostly measures who else is running.
"""

import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from planner.bench.env import pick_device
from planner.bench.micro import copy_bandwidth, launch_overhead, matmul_tflops
from planner.bench.model import build, new_caches
from planner.bench.run import DEEP, NARROW, TINY_GPT, WIDE, anchor_points, wide_layers, workload_points
from planner.bench.user_model import profile_document
from planner.bench.timing import measure
from planner.bench.workload import Point, run_points
from planner.inputs.bench_result import CalibrationError, parse_result
from planner.calibration.fit import fit
from planner.calibration.tables import held_out_model_table, holdout_table
from tests.fixtures.bench_docs import with_times
from planner.inputs.models import DecoderProfile, load_models

ROOT = Path(__file__).resolve().parents[2]
HELD_OUT_TOLERANCE = 0.15
# A quick run recorded on a quiet 2-core Intel Xeon guest (torch 2.13.0, one thread, CPU clock), 2026-11-27
RECORDED_QUICK = ROOT / "tests" / "fixtures" / "bench_quick_recorded.json"

GQA = DecoderProfile(id="t-gqa", name="t-gqa", layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16, ffn=96,
                     ffn_kind="swiglu", vocab=50, context=32, tied_embeddings=False, norm="rmsnorm",
                     learned_pos_emb=False, bias=False, source="test")
GPT = DecoderProfile(id="t-gpt", name="t-gpt", layers=2, hidden=48, heads=3, kv_heads=3, head_dim=16, ffn=192,
                     ffn_kind="gelu", vocab=40, context=32, tied_embeddings=True, norm="layernorm",
                     learned_pos_emb=True, bias=True, source="test")

MOE = DecoderProfile(id="t-moe", name="t-moe", layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16, ffn=32,
                     ffn_kind="swiglu", vocab=50, context=32, tied_embeddings=False, norm="rmsnorm",
                     learned_pos_emb=False, bias=False, source="test", experts=4, experts_per_token=2, shared_ffn=48)


@pytest.mark.parametrize("profile", [*(load_models().get(m) for m in ("cfdna-gen", "gpt2-124m", "llama-3-8b",
                                                                      "mixtral-8x7b", "qwen1.5-moe-a2.7b")),
                                     GQA, GPT, MOE])
def test_torch_model_has_exactly_the_profiles_parameters(profile):
    model = build(profile, "meta", torch.float32)  # shapes only: an 8B model costs no memory
    assert sum(p.numel() for p in model.parameters()) == profile.params


@pytest.mark.parametrize("profile", [GQA, GPT, MOE])
def test_decode_with_kv_cache_equals_the_full_forward_pass(profile):
    model = build(profile, "cpu", torch.float32).eval()
    tokens = torch.randint(0, profile.vocab, (3, 12), generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        full = model(tokens)[:, -1]
        caches = new_caches(profile, 3, 12, "cpu", torch.float32)
        model(tokens[:, :11], caches, 0)
        step = model(tokens[:, 11:], caches, 11)[:, -1]
    assert torch.allclose(full, step, atol=1e-5, rtol=1e-4)


def test_device_choice_is_checked():
    assert pick_device("auto") in ("cuda", "mps", "cpu")
    assert pick_device("cpu") == "cpu"
    with pytest.raises(ValueError, match="tpu"):
        pick_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA GPU"):
            pick_device("cuda")


def test_micro_benchmarks_report_their_definitions():
    bw = copy_bandwidth("cpu", 8, 0.02)
    assert bw["bytes_moved"] == 2 * 8 * 2**20  # read + write of 8 MiB
    assert bw["gbps"] == pytest.approx(bw["bytes_moved"] / bw["timing"]["median_s"] / 1e9)
    mm = matmul_tflops("cpu", "fp32", 128, 0.02)
    assert mm["tflops"] == pytest.approx(2 * 128**3 / mm["timing"]["median_s"] / 1e12)
    lo = launch_overhead("cpu", 0.02, ops=50)
    assert 0.01 < lo["us_per_op"] < 1000 and lo["us_per_op"] == pytest.approx(lo["timing"]["median_s"] / 50 * 1e6)


def test_cpu_clock_needs_one_thread():
    if torch.get_num_threads() == 1:
        pytest.skip("torch already runs one thread")
    with pytest.raises(ValueError, match="one torch thread"):
        measure(lambda: None, "cpu", 0.01, clock="cpu")


def test_a_point_that_cannot_run_is_recorded_not_fatal():
    rows = run_points([Point(GQA, "decode", 10**8, position=16), Point(GQA, "forward", 2, seq=8)], "cpu", 0.05,
                      rounds=1)
    assert rows[0]["status"] == "unavailable" and rows[0]["reason"]
    assert rows[1]["status"] == "ok" and rows[1]["measured_s"] > 0
    with pytest.raises(ValueError, match="position"):
        run_points([Point(GQA, "decode", 1, position=40)], "cpu", 0.05)


# Timing rounds of the tests' bench runs: what they check (the document, the fit's design, the CLI's messages) does not
# depend on how many rounds time each point, only how noisy the figures are; --quick's default 21 rounds (what keeps a
# held-out model's error within 15 %) are judged on a recorded run below and by benchmarks/bench_quick_holdout.py.
TEST_ROUNDS = ("--rounds", "7")
TEST_MODEL_ROUNDS = ("--rounds", "4")  # one round in each of the model bench's 4 passes over the sizes


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "quick.json"
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "planner.bench", "--quick", *TEST_ROUNDS, "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, proc, time.perf_counter() - t0


def test_quick_cli_writes_a_result_the_planner_accepts(quick_run):
    out, proc, seconds = quick_run
    assert "timing round 7/7 over 10 workload points" in proc.stderr and "fitted:" in proc.stderr  # progress
    assert "bandwidth efficiency" in proc.stdout and "% (95 %" in proc.stdout  # the fit with its uncertainty
    result = parse_result(out.read_bytes(), out.name)
    env = result["environment"]
    for key in ("device_name", "memory_gb", "torch_version", "cuda_version", "cpu_model", "cpu_threads", "date"):
        assert key in env
    assert env["torch_threads"] == 1 and env["clock"] == "cpu" and env["device_type"] == "cpu"  # the CPU default
    assert result["torch_compile"].startswith("skipped")  # --quick skips torch.compile, with the reason
    assert {w["workload"] for w in result["workloads"]} == {"decode", "forward", "train"}
    assert all(w["status"] == "ok" and w["measured_s"] > 0 for w in result["workloads"])
    bw = result["micro"]["memory_bandwidth"]
    # the copy: 5 fresh allocations before the workloads and 5 after, the median of all 10 kept
    assert len(bw["passes_gbps"]) == 2 and len(bw["allocations_gbps"]) == 10
    assert sorted(bw["allocations_gbps"])[4] <= bw["gbps"] <= sorted(bw["allocations_gbps"])[5]
    print(f"\n--quick (1 thread, CPU clock) took {seconds:.1f} s wall including Python start-up")


def test_the_anchor_points_separate_the_three_factors(quick_run):
    """The quick design has points each factor dominates (launch-bound NARROW, bandwidth-bound DEEP, compute-bound
    forward and training passes): times from the planner's model at known factors, with 2 % noise, give a fit that
    pins every factor down and lands within its own 95 % interval."""
    assert {NARROW.id, DEEP.id} == {p.model.id for p in anchor_points("cpu", "fp32")}
    assert anchor_points("cpu", "fp32")[0] in workload_points("cpu", True, "fp32", False)
    result = parse_result(quick_run[0].read_bytes(), "quick.json")
    truth = (0.5, 0.8, 5.0)
    cal = fit(with_times(result, *truth, noise=0.02, seed=7))
    assert cal.unidentified == ()
    for value, t, err in zip((cal.mem_bw_efficiency, cal.compute_efficiency, cal.overhead_us), truth,
                             cal.fit_err_pct):
        assert abs(value / t - 1) <= err / 100
    # and the measured run itself: every factor pinned (its uncertainty includes how well the roofline fits)
    assert fit(result).unidentified == ()


def test_a_calibration_fitted_without_a_model_predicts_it_on_a_recorded_run():
    """Fit on every point of a recorded quick run but the GPT-style model's; predict its decode step and forward
    pass (another architecture: GELU, LayerNorm, biases, learned positions, another vocabulary and depth). On
    recorded timings, so the verdict is the fit's, not this machine's load; benchmarks/bench_quick_holdout.py prints
    the same figure for a live run."""
    result = parse_result(RECORDED_QUICK.read_bytes(), RECORDED_QUICK.name)
    assert sum(w["model"]["id"] != TINY_GPT.id for w in result["workloads"]) >= 5
    rows = held_out_model_table(result, TINY_GPT.id)
    report = "\n".join(f"{TINY_GPT.id} {r['workload']} b{r['batch']}: measured {r['measured_s'] * 1e3:.2f} ms, "
                       f"calibrated {r['predicted_s'] * 1e3:.2f} ms ({r['error_pct']:+.1f} %)" for r in rows)
    assert {r["workload"] for r in rows} == {"decode", "forward"}
    assert all(abs(r["error_pct"]) <= 100 * HELD_OUT_TOLERANCE for r in rows), report


def test_fit_needs_measured_points(quick_run):
    result = parse_result(quick_run[0].read_bytes(), "quick.json")
    with pytest.raises(CalibrationError, match="no workload points"):
        fit(result, points=[])


# ---------------------------------------------------------------- your own model (`--model`)

TINY_GPT2_ARGS = ("layers=2", "hidden=128", "heads=4", "vocab=1024", "context=256")


def _bench_model(*args, out=None, timeout=240):
    cmd = [sys.executable, "-m", "planner.bench", "--quick", *args] + (["--out", str(out)] if out else [])
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def test_your_own_model_is_traced_timed_and_held_out_at_every_size(tmp_path):
    """Measure here, predict a size never fitted: a small GPT-2 (examples/models/gpt2.py) traced and timed at 32 to
    256 tokens on this CPU (forward and training step), and a prediction for each size from a fit without it. How
    close the predictions come depends on this machine's timing: benchmarks/bench_model_holdout.py prints it."""
    out = tmp_path / "gpt2.json"
    t0 = time.perf_counter()
    proc = _bench_model("--model", "examples/models/gpt2.py:build", "--input", "tokens=32,64,128,256",
                        *[x for a in TINY_GPT2_ARGS for x in ("--arg", a)], *TEST_MODEL_ROUNDS, out=out)
    seconds = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "tracing examples/models/gpt2.py:build" in proc.stderr and "train step" in proc.stderr
    result = parse_result(out.read_bytes(), out.name)
    run = result["model_runs"][0]
    assert run["profile"]["kind"] == "traced" and run["profile"]["trace"]["sizes"] == [32, 64, 128, 256]
    assert run["args"] == {"layers": 2, "hidden": 128, "heads": 4, "vocab": 1024, "context": 256}
    assert [(p["workload"], p["size"]) for p in run["points"]] == [(w, s) for s in (32, 64, 128, 256)
                                                                   for w in ("forward", "train")]
    assert all(p["status"] == "ok" for p in run["points"])
    assert {w["model"]["id"] for w in result["workloads"]} == {NARROW.id, DEEP.id}  # the anchors
    rows = holdout_table(result)
    report = "\n".join(f"tokens={r['size']} {r['workload']}: measured {r['measured_s'] * 1e3:.2f} ms, predicted "
                        f"{r['predicted_s'] * 1e3:.2f} ms ({r['error_pct']:+.1f} %)" for r in rows)
    print(f"\n--model --quick took {seconds:.1f} s\n{report}")
    assert [(r["size"], r["workload"]) for r in rows] == [(s, w) for s in (32, 64, 128, 256)
                                                          for w in ("forward", "train")]
    assert all(r["predicted_s"] > 0 for r in rows)


def test_model_bench_refuses_bad_input_with_a_message(tmp_path):
    proc = _bench_model("--model", "tests/fixtures/traced_models.py:raises", "--input", "L=8,16,32")
    assert proc.returncode == 2 and "config file not found" in proc.stderr and "Traceback" not in proc.stderr
    proc = _bench_model("--model", "examples/models/gpt2.py:build")
    assert proc.returncode == 2 and "--model needs --input" in proc.stderr
    proc = _bench_model("--rounds", "0")
    assert proc.returncode == 2 and "--rounds 0: give 1 to 1000" in proc.stderr
    proc = _bench_model("--model", "examples/models/gpt2.py:build", "--input", "tokens=32,64")
    assert proc.returncode == 2 and "at least 3 sizes" in proc.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: traced\nid: x\n")
    proc = _bench_model("--model", "examples/models/gpt2.py:build", "--input", "tokens=32,64,128",
                        "--profile", str(bad))
    assert proc.returncode == 2 and "bad.yaml" in proc.stderr and "Traceback" not in proc.stderr


def test_a_given_profile_is_embedded_as_data():
    doc = profile_document(str(ROOT / "examples" / "profiles" / "seed004-sdpa.yaml"))
    assert doc["kind"] == "traced" and doc["trace"]["date"] == "2026-11-22" and doc["id"] == "seed004-sdpa"


def test_the_gpu_bandwidth_anchor_is_sized_to_the_gpu():
    """WIDE's layers (8192 wide, SwiGLU 22016: 4 x 8192^2 + 3 x 8192 x 22016 + 2 x 8192 = 809,517,056 weights, 1.62 GB
    in bf16, 3.24 GB in fp32) fill at most a quarter of the GPU in the workload dtype and half of it in fp32 while
    built, between 1 and 4 layers: an H200 (141 GB) takes 4; a 16 GiB card 2 in bf16 (0.25 x 17.18 GB / 1.62 GB =
    2.65), 1 in fp32 (0.25 x 17.18 / 3.24 = 1.33); an 8 GiB card 1 (its own floor: the step still streams 1.62 GB)."""
    layer = 4 * 8192 ** 2 + 3 * 8192 * 22016 + 2 * 8192
    assert WIDE.params == WIDE.layers * layer + 512 * 8192 + 8192  # plus the tied 512-token embedding, final norm
    assert wide_layers(141e9, "bf16") == 4
    assert (wide_layers(16 * 2**30, "bf16"), wide_layers(16 * 2**30, "fp32")) == (2, 1)
    assert wide_layers(8 * 2**30, "bf16") == 1
    ids = [(p.model.id, p.model.layers) for p in anchor_points("cuda", "bf16", 80e9)]
    assert ids.count(("bench-wide", 4)) == 3 and ("bench-deep", 16) not in ids
    kinds = {(p.model.id, p.kind) for p in anchor_points("cuda", "bf16", 80e9)}
    assert ("bench-wide", "forward") in kinds  # 2 x 3.24e9 weights x 2,048 tokens = 13.3 TFLOP: compute-bound
    assert [p.model.id for p in anchor_points("cpu", "fp32")].count(WIDE.id) == 0
