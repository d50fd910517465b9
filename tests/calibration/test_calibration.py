"""Calibration: safe parsing with named errors, the fit, transfer by GPU class, share-link text, CLI wiring.

The valid base document is the example result measured on this machine's CPU (data/calibrations/). Transfer
expectations are derived by hand from the priors in data/runtimes.yaml.
"""

import json
import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from planner import DATA_DIR
from planner.base.schema import Record
from planner.inputs.bench_result import MAX_RESULT_BYTES, CalibrationError, parse_result, run_model
from planner.calibration.fit import Calibration, fit, load_calibration
from planner.calibration.measured import (BARE_OP_HOST_US, device_gpu, factor_efficiency, measured_points,
                                          predict_seconds)
from planner.calibration.tables import point_table, side_by_side
from planner.calibration.transfer import measured_factors
from planner.cli import main
from planner.inputs.catalog import load_catalog
from planner.engine.plan import Plan
from planner.inputs.models import load_models
from planner.inputs.runtimes import load_runtimes
from planner.inputs.jobs import Generate
from planner.calibration.solve import FACTORS, T95
from planner.calibration.tables import holdout_table
from tests.fixtures.bench_docs import DESIGNED, SMALL, cpu_result, model_run, with_times

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((DATA_DIR / "calibrations").glob("*_cpu-*.json"))
CATALOG = load_catalog()




# ---------------------------------------------------------------- the example file and the fit

def test_device_gpu_carries_the_measured_peaks(example):
    gpu = device_gpu(example)
    micro = example["micro"]
    assert gpu.mem_bw_gbps == micro["memory_bandwidth"]["gbps"]
    assert gpu.fp32_tflops == micro["matmul"]["fp32"]["best_tflops"]
    assert gpu.fp8_tflops is None and gpu.runpod is None and gpu.id.startswith("measured-cpu-")
    # memory recorded in decimal GB; the catalog's vram_gib is GiB
    assert math.isclose(gpu.vram_gb, example["environment"]["memory_gb"], rel_tol=1e-9)


def test_cpu_fit_applies_to_the_device_and_nothing_else(example):
    cal = fit(example)
    assert cal.gpu_id is None and cal.device_class == "cpu" and cal.compute_path == "fp32"
    assert cal.fit_points == sum(1 for w in example["workloads"] if w["status"] == "ok" and not w["compiled"])
    h100 = CATALOG.get("h100-sxm")
    prior = load_runtimes().get("pytorch-eager").efficiency("hbm")
    assert cal.adjust(h100, prior) == prior  # a CPU says nothing about a datacenter GPU
    dev = cal.measured_gpu()
    eff = cal.adjust(dev, load_runtimes().get("pytorch-eager").efficiency(dev.memory_class))
    assert (eff.mem_bw_efficiency, eff.compute_efficiency, eff.launch_overhead_us) == \
        pytest.approx((cal.mem_bw_efficiency, cal.compute_efficiency, cal.overhead_us))
    assert eff.source.startswith("calibrated")
    # on its own points the fit is better than the analytic priors
    rows = point_table(example, cal)
    err = lambda key: sum(abs(math.log(r[key] / r["measured_s"])) for r in rows if r["runtime"] == "pytorch-eager")
    assert err("calibrated_s") < err("analytic_s")


def test_measured_points_lists_every_workload(example):
    pts = measured_points(example)
    assert len(pts) == len(example["workloads"])
    assert {p["workload"] for p in pts} <= {"decode", "forward", "train"}
    for p, w in zip(pts, example["workloads"]):
        assert p["measured_s"] == w.get("measured_s") and p["batch"] == w["batch"]


def _synthetic_gpu_result(true_bw, true_mm, true_lo, gbps=900.0, bf16=150.0, points=None):
    """A result for an RTX 4090 whose 'measured' times follow the planner's own model with known factors."""
    cf = load_models().get("cfdna-gen")
    prof = {"kind": "decoder", **{k: getattr(cf, k) for k in ("id", "name", "layers", "hidden", "heads", "kv_heads",
                                                               "head_dim", "ffn", "ffn_kind", "vocab", "context",
                                                               "tied_embeddings", "norm", "learned_pos_emb", "bias",
                                                               "source")}}
    doc = {"kind": "planner-bench-result", "schema_version": 1, "bench_version": 1, "quick": False,
           "environment": {"device_type": "cuda", "device_name": "NVIDIA GeForce RTX 4090", "compute_capability": "8.9",
                           "memory_gb": 25.3, "torch_version": "2.13.0", "torch_threads": 8, "date": "2026-11-20"},
           "micro": {"memory_bandwidth": {"gbps": gbps}, "launch_overhead": {"us_per_op": 4.0},
                     "matmul": {"fp32": {"status": "ok", "best_tflops": 80.0},
                                "bf16": {"status": "ok", "best_tflops": bf16}}},
           "workloads": []}
    points = points or [("decode", 1, 128), ("decode", 64, 128), ("decode", 256, 32), ("forward", 8, 256),
                        ("forward", 64, 256), ("train", 16, 256)]
    doc["workloads"] = [{"model": prof, "workload": k, "batch": b, "precision": "bf16", "compiled": False,
                         "status": "ok", ("position" if k == "decode" else "seq"): s, "measured_s": 1.0}
                        for k, b, s in points]
    dev = device_gpu(doc)
    truth = lambda g, e: factor_efficiency(e, true_bw, true_mm, true_lo, g.memory_class)
    for w in doc["workloads"]:
        size = w.get("position") or w.get("seq")
        w["measured_s"] = predict_seconds(w["workload"], cf, w["batch"], size, "bf16", dev, truth)
    return doc


def test_fit_recovers_known_factors_and_expresses_them_against_the_catalog_references():
    doc = parse_result(json.dumps(_synthetic_gpu_result(0.8, 0.6, 5.0)), "gpu.json")
    cal = fit(doc)
    rtx = CATALOG.get("rtx-4090")
    assert cal.gpu_id == "rtx-4090" and cal.device_class == "gddr" and cal.fit_rms_pct < 1.0
    # measured 900 GB/s at 0.8 -> 720 GB/s achieved = 720 / 1008 of the datasheet; 0.6 x 150 measured TFLOPS of the
    # catalog ceiling, the RTX 4090's published 165.26 TFLOPS (data/gpus.yaml)
    assert cal.mem_bw_efficiency == pytest.approx(0.8 * 900 / rtx.mem_bw_gbps, rel=0.03)
    assert cal.compute_efficiency == pytest.approx(0.6 * 150 / 165.26, rel=0.03)
    # the measured device's own ceiling is the bench's 150 TFLOPS, replacing the catalog's
    dev = cal.measured_gpu()
    assert dev.ceiling("bf16").tflops == 150 and "planner.bench" in dev.ceiling("bf16").how
    assert cal.overhead_us == pytest.approx(5.0, rel=0.05)


def test_transfer_by_class_and_architecture_follows_the_prior_ratio():
    cal = Calibration("NVIDIA GeForce RTX 4090", "rtx-4090", "gddr", 0.9, 0.6, 6.0, "bf16", 900.0,
                      (("fp32", 80.0), ("bf16", 150.0)), 25.3, "2026-11-20", 3.0, 6)
    eager, comp = load_runtimes().get("pytorch-eager"), load_runtimes().get("torch-compile")
    g, h = eager.efficiency("gddr"), eager.efficiency("hbm")
    # the measured GPU: the fitted bandwidth and compute; its host dispatches 6.0 us a bare op where the reference host
    # took BARE_OP_HOST_US, so eager's Python dispatch scales by that ratio; the GPU-side launch gap is eager's own
    e = cal.adjust(CATALOG.get("rtx-4090"), g)
    assert (e.mem_bw_efficiency, e.compute_efficiency) == pytest.approx((0.9, 0.6))
    assert e.host_us_per_kernel == pytest.approx(g.host_us_per_kernel * 6.0 / BARE_OP_HOST_US)
    assert e.launch_overhead_us == g.launch_overhead_us
    # same class and architecture (L4, Ada GDDR6): the same ratio to the prior = the same fractions; the L4 is rented
    # with another host, so dispatch stays the runtime's own
    e = cal.adjust(CATALOG.get("l4"), g)
    assert (e.mem_bw_efficiency, e.compute_efficiency) == pytest.approx((0.9, 0.6))
    assert (e.launch_overhead_us, e.host_us_per_kernel) == (g.launch_overhead_us, g.host_us_per_kernel)
    # GDDR Ada -> HBM Hopper: prior_hbm x (fit / prior_gddr), half of the log ratio across architectures
    e = cal.adjust(CATALOG.get("h100-sxm"), h)
    assert e.mem_bw_efficiency == pytest.approx(h.mem_bw_efficiency * math.sqrt(0.9 / g.mem_bw_efficiency))
    assert e.compute_efficiency == pytest.approx(h.compute_efficiency * math.sqrt(0.6 / g.compute_efficiency))
    assert (e.launch_overhead_us, e.host_us_per_kernel) == (h.launch_overhead_us, h.host_us_per_kernel)
    assert "HBM" in e.source and "architecture" in e.source
    # another runtime on the measured GPU: its own values scaled by the fit over what eager's priors assumed for the
    # bare ops the bench times (not eager's tuned values, which fold Hugging Face generate's overheads in), capped at 1;
    # torch.compile replays CUDA graphs, so the host's dispatch speed does not reach its launch gap
    # (validation/REPORT.md, 'A real GPU': what happened when it did)
    c, bare = comp.efficiency("gddr"), eager.priors()
    e = cal.adjust(CATALOG.get("rtx-4090"), c)
    assert e.mem_bw_efficiency == pytest.approx(min(1.0, c.mem_bw_efficiency * 0.9 / bare["mem_bw_efficiency.gddr"]))
    assert (e.launch_overhead_us, e.host_us_per_kernel) == (c.launch_overhead_us, 0.0)
    fast = Calibration("NVIDIA GeForce RTX 4090", "rtx-4090", "gddr", 0.99, 0.6, 6.0, "bf16", 900.0,
                       (("fp32", 80.0), ("bf16", 150.0)), 25.3, "2026-11-20", 3.0, 6)
    assert fast.adjust(CATALOG.get("rtx-4090"), c).mem_bw_efficiency <= 1.0  # never above the datasheet
    # the measured-peak form of the same GPU: the fraction of the measured 900 GB/s that gives 0.9 x 1008
    dev = cal.measured_gpu()
    e = cal.adjust(dev, load_runtimes().get("pytorch-eager").efficiency(dev.memory_class))
    assert e.mem_bw_efficiency * 900.0 == pytest.approx(0.9 * CATALOG.get("rtx-4090").mem_bw_gbps)


def test_transferred_fractions_are_capped_at_one():
    cal = Calibration("NVIDIA GeForce RTX 4090", "rtx-4090", "gddr", 1.3, 0.95, 4.0, "bf16", 1200.0,
                      (("fp32", 80.0), ("bf16", 160.0)), 25.3, "2026-11-20")
    e = cal.adjust(CATALOG.get("l40s"), load_runtimes().get("pytorch-eager").efficiency("gddr"))
    assert e.mem_bw_efficiency == 1.0


def test_side_by_side_shows_analytic_and_calibrated(example):
    # torch.compile: no Python dispatch to wait for, so the GPU-side factors the calibration changes set the time
    plan = Plan(load_models().get("cfdna-gen"), Generate(1000, 1, 165), "bf16", runtime="torch-compile")
    gpu_cal = fit(parse_result(json.dumps(_synthetic_gpu_result(0.6, 0.5, 8.0)), "gpu.json"))
    rows = {r["gpu_id"]: r for r in side_by_side(plan, gpu_cal, gpu_names=["rtx-4090", "h100-sxm"])}
    assert set(rows) == {"measured-rtx-4090", "rtx-4090", "h100-sxm"}
    slower = rows["rtx-4090"]
    assert slower["calibrated_s"] > slower["analytic_s"] and slower["efficiency_source"].startswith("calibrated")
    cpu_rows = side_by_side(Plan(load_models().get("cfdna-gen"), Generate(10, 1, 16), "fp32"), fit(example),
                            gpu_names=["h100-sxm"])
    assert cpu_rows[0]["gpu_id"].startswith("measured-cpu-") and cpu_rows[1]["change_pct"] == 0


# ---------------------------------------------------------------- share-link text

def test_query_round_trip_keeps_every_factor(example):
    for cal in (fit(example), fit(parse_result(json.dumps(_synthetic_gpu_result(0.7, 0.5, 6.0)), "g.json"))):
        text = cal.to_query()
        assert len(text) < 300 and all(c.isalnum() or c in ".=;-_" for c in text)
        back = Calibration.from_query(text)
        assert (back.gpu_id, back.device_class, back.compute_path, back.bench_date) == \
            (cal.gpu_id, cal.device_class, cal.compute_path, cal.bench_date)
        for f in ("mem_bw_efficiency", "compute_efficiency", "overhead_us", "measured_bw_gbps", "memory_gb"):
            assert getattr(back, f) == pytest.approx(getattr(cal, f), rel=1e-3)
        assert back.measured_gpu().id == cal.measured_gpu().id  # the device row survives the link


@pytest.mark.parametrize("text", [
    "", "garbage", "v=1;dev=rtx-4090", "<script>alert(1)</script>", "v=1;v=1", "=;=",
    "v=1;dev=rtx-4090;cls=gddr;bw=nan;mm=0.7;lo=4;path=bf16;pbw=900;bf16=150;mem=24;d=20261120",
    "v=1;dev=rtx-4090;cls=gddr;bw=-0.5;mm=0.7;lo=4;path=bf16;pbw=900;bf16=150;mem=24;d=20261120",
    "v=1;dev=rtx-4090;cls=gddr;bw=0.8;mm=0.7;lo=4;path=bf16;pbw=1e9;bf16=150;mem=24;d=20261120",
    "v=1;dev=rtx-9999;cls=gddr;bw=0.8;mm=0.7;lo=4;path=bf16;pbw=900;bf16=150;mem=24;d=20261120",
    "v=1;dev=h100-sxm;cls=gddr;bw=0.8;mm=0.7;lo=4;path=bf16;pbw=900;bf16=150;mem=24;d=20261120",
    "v=2;dev=rtx-4090;cls=gddr;bw=0.8;mm=0.7;lo=4;path=bf16;pbw=900;bf16=150;mem=24;d=20261120",
    "v=1;dev=rtx-4090;cls=gddr;bw=0.8;mm=0.7;lo=4;path=fp8;pbw=900;bf16=150;mem=24;d=20261120",
    "v=1;dev=rtx-4090;cls=gddr;bw=0.8;mm=0.7;lo=4;path=bf16;pbw=900;mem=24;d=20261120",
    "v=1;dev=rtx-4090;cls=gddr;bw=0.8;mm=0.7;lo=4;path=bf16;pbw=900;bf16=150;mem=24;d=20261340",
    "v=1;dev=rtx-4090;cls=gddr;bw=0.8;mm=0.7;lo=4;path=bf16;pbw=900;bf16=150;mem=24;d=20261120;evil=1",
    "x" * 5000,
])
def test_from_query_rejects_garbage_with_a_message(text):
    with pytest.raises(CalibrationError) as exc:
        Calibration.from_query(text)
    assert "calibration link" in str(exc.value)


def test_gpu_not_in_catalog_and_impossible_gpu_figures(example, refused):
    doc = _synthetic_gpu_result(0.8, 0.6, 5.0)
    doc["environment"]["device_name"] = "NVIDIA GeForce RTX 4099"
    msg = refused(doc, "unknown GPU")
    assert "did you mean" in msg and "data/gpus.yaml" in msg
    doc = _synthetic_gpu_result(0.8, 0.6, 5.0, gbps=5000.0)  # a 4090 has 1008 GB/s
    refused(doc, "datasheet")


def test_too_large_is_refused_before_parsing(example, tmp_path, refused):
    big = json.dumps(example) + " " * MAX_RESULT_BYTES
    refused(big, "bytes")
    path = tmp_path / "big.json"
    path.write_text(big)
    with pytest.raises(CalibrationError, match="bytes"):
        load_calibration(path)
    with pytest.raises(CalibrationError, match="cannot read"):
        load_calibration(tmp_path / "missing.json")


# ---------------------------------------------------------------- CLI (planner estimate --calibration)

def _cli(*args):
    return subprocess.run([sys.executable, "-m", "planner", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_cli_estimate_with_a_calibration_file(tmp_path):
    doc = _synthetic_gpu_result(0.6, 0.5, 8.0)
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps(doc))
    base = ("estimate", "--model", "cfdna-gen", "--gpu", "rtx-4090", "--sequences", "1000", "--format", "json",
            "--runtime", "torch-compile")  # GPU-bound, unlike eager generate at this batch (host dispatch)
    analytic, calibrated = _cli(*base), _cli(*base, "--calibration", str(path))
    assert analytic.returncode == 0 and calibrated.returncode == 0, calibrated.stderr
    a, c = json.loads(analytic.stdout)[0], json.loads(calibrated.stdout)[0]
    assert c["efficiency"]["source"].startswith("calibrated") and c["seconds"] > a["seconds"]
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    out = _cli(*base, "--calibration", str(bad))
    assert out.returncode == 2 and "not valid JSON" in out.stderr and "Traceback" not in out.stderr


def test_calibration_subcommand_prints_the_fit_and_both_estimates(capsys):
    assert main(["calibration", str(EXAMPLES[0]), "--model", "cfdna-gen", "--precision", "fp32",
                 "--sequences", "100", "--gpu", "h100-sxm", "--format", "json"]) == 0
    out = capsys.readouterr()
    factors, points, gpus = [json.loads(block) for block in out.out.strip().split("\n\n")]
    assert [f["factor"] for f in factors] == ["bandwidth efficiency", "compute efficiency", "per-kernel overhead"]
    assert all(f["uncertainty_95_pct"] > 0 for f in factors)
    assert all({"measured_s", "analytic_s", "calibrated_s"} <= set(p) for p in points)
    assert [g["gpu_id"] for g in gpus][1:] == ["h100-sxm"] and gpus[0]["gpu_id"].startswith("measured-cpu-")
    # the committed example predates the launch-bound anchor points: every point it has is a decoder at hundreds
    # of tokens or a 132M-parameter decode, so nothing pins the launch overhead, and the CLI says so
    overhead = next(f for f in factors if f["factor"] == "per-kernel overhead")
    assert not overhead["pinned_down"]
    assert "ill-conditioned" in out.err and "overhead-bound steps" in out.err


def test_calibration_subcommand_table_shows_each_factor_with_its_uncertainty(capsys, example, tmp_path):
    path = tmp_path / "designed.json"
    path.write_text(json.dumps(with_times(cpu_result(example, model_sizes=()), 0.5, 0.7, 6.0, noise=0.02, seed=3)))
    assert main(["calibration", str(path), "--model", "cfdna-gen", "--precision", "fp32", "--sequences", "10"]) == 0
    out = capsys.readouterr()
    for name in ("bandwidth efficiency 0.", "compute efficiency 0.", "per-kernel overhead "):
        line = next(line for line in out.out.splitlines() if line.startswith(name))
        assert "± " in line and "% (95 %" in line and "NOT pinned" not in line
    assert "warning" not in out.err


def test_example_fit_on_cfdna_gen_predicts_gpt2_within_15_percent(example):
    """The stored CPU run (real presets, measured on this machine): a fit on cfDNA-Gen alone predicts GPT-2 124M."""
    if not any(w["model"]["id"] == "gpt2-124m" for w in example["workloads"]):
        pytest.skip("the example is a --quick run")
    cal = fit(example, points=[w for w in example["workloads"] if w["model"]["id"] == "cfdna-gen"])
    gpt2 = load_models().get("gpt2-124m")
    for w in (w for w in example["workloads"] if w["model"]["id"] == "gpt2-124m"):
        pred = predict_seconds(w["workload"], gpt2, w["batch"], w.get("position") or w["seq"], w["precision"],
                               cal.measured_gpu(), cal.adjust)
        assert abs(pred / w["measured_s"] - 1) <= 0.15, (w["workload"], pred, w["measured_s"])


def test_a_calibration_link_gets_the_same_datasheet_checks_as_an_upload(example):
    cal = fit(_synthetic_gpu_result(0.8, 0.6, 5.0))  # an RTX 4090: 1,008 GB/s, 165 TFLOPS bf16 on its datasheet
    Calibration.from_query(cal.to_query())  # as fitted: accepted
    fields = dict(part.split("=") for part in cal.to_query().split(";"))
    for key, value in (("pbw", "20000"), ("bf16", "10000"), ("bw", "3")):  # 20x the bandwidth, 60x the TFLOPS, 3x
        bent = ";".join(f"{k}={value if k == key else v}" for k, v in fields.items())
        with pytest.raises(CalibrationError, match="datasheet"):
            Calibration.from_query(bent)


def test_a_fleet_uses_each_calibration_for_its_own_gpu():
    from planner.calibration.fit import Fleet
    ada = fit(_synthetic_gpu_result(0.8, 0.6, 5.0))  # an RTX 4090 (Ada)
    doc = _synthetic_gpu_result(0.5, 0.4, 9.0)
    doc["environment"]["device_name"] = "NVIDIA A100-SXM4-80GB"  # the same points, named as an A100 (Ampere)
    doc["micro"]["matmul"]["bf16"]["best_tflops"] = 150.0
    doc["micro"]["matmul"]["fp32"]["best_tflops"] = 19.0  # under the A100's 19.5 TFLOPS fp32 datasheet
    ampere = fit(doc)
    fleet = Fleet((ada, ampere))
    prior = load_runtimes().get("pytorch-eager")
    for gpu_id, owner in (("rtx-4090", ada), ("a100-sxm-80gb", ampere), ("l40s", ada), ("rtx-3090", ampere),
                          ("h100-sxm", ada)):  # own GPU; same architecture; else the first CUDA calibration
        gpu = CATALOG.get(gpu_id)
        eff = prior.efficiency(gpu.memory_class)
        assert fleet.adjust(gpu, eff) == owner.adjust(gpu, eff), gpu_id
    again = Fleet.from_query(fleet.to_query())
    assert [c.gpu_id for c in again.members] == ["rtx-4090", "a100-sxm-80gb"]


# ---------------------------------------------------------------- a CPU bench calibrates a catalog CPU's row

def _synthetic_cpu_result(true_bw, true_mm, true_lo, threads=32, name="AMD Ryzen 9 7950X 16-Core Processor"):
    """A CPU bench result (bf16 points) whose 'measured' times follow the planner's model with known factors, on a
    machine that measured 70 GB/s, 4.0 bf16 TFLOPS and 5 us per op (the fit's weak prior pull then sits on the truth
    for the launch time) and reports the OS's model name of a Ryzen 9 7950X."""
    doc = _synthetic_gpu_result(0.5, 0.5, 5.0)  # the same points and model; re-timed below on the CPU
    doc["environment"] = {"device_type": "cpu", "device_name": name, "cpu_model": name, "cpu_threads": threads,
                          "memory_gb": 68.7, "torch_version": "2.13.0+cpu", "torch_threads": threads,
                          "date": "2026-11-22"}
    doc["micro"] = {"memory_bandwidth": {"gbps": 70.0}, "launch_overhead": {"us_per_op": 5.0},
                    "matmul": {"fp32": {"status": "ok", "best_tflops": 2.0},
                               "bf16": {"status": "ok", "best_tflops": 4.0}}}
    dev = device_gpu(doc, device="")  # the measured machine: its measured peaks are the reference
    truth = lambda g, e: factor_efficiency(e, true_bw, true_mm, true_lo, g.memory_class)
    cf = load_models().get("cfdna-gen")
    for w in doc["workloads"]:
        w["measured_s"] = predict_seconds(w["workload"], cf, w["batch"], w.get("position") or w.get("seq"), "bf16",
                                          dev, truth)
    return parse_result(json.dumps(doc), "cpu.json")


def test_a_cpu_bench_calibrates_the_catalog_cpu_it_names():
    cal = fit(_synthetic_cpu_result(0.8, 0.6, 5.0))
    ryzen = CATALOG.get("amd-ryzen-9-7950x")
    assert cal.gpu_id == ryzen.id and cal.device_class == "cpu" and cal.fit_rms_pct < 1.0
    # 0.8 of the measured 70 GB/s = 56 GB/s achieved = 56 / 83.2 of the datasheet (2 x DDR5-5200 x 8 B);
    # 0.6 of the measured 4.0 TFLOPS bf16 = 2.4 of the 4.608 TFLOPS peak (16 x 4.5 GHz x 32 x 2 for AVX512-BF16)
    assert cal.mem_bw_efficiency == pytest.approx(0.8 * 70.0 / 83.2, rel=0.03)
    assert cal.compute_efficiency == pytest.approx(0.6 * 4.0 / 4.608, rel=0.03)
    eager = load_runtimes().get("pytorch-eager")
    eff = cal.adjust(ryzen, eager.efficiency("cpu"))
    assert eff.source.startswith("calibrated: fitted on this CPU")
    assert eff.mem_bw_efficiency * ryzen.mem_bw_gbps == pytest.approx(0.8 * 70.0, rel=0.03)  # the same GB/s
    for other in ("amd-epyc-9654", "rtx-4090"):  # other CPUs and the GPUs keep their priors
        dev = CATALOG.get(other)
        assert cal.adjust(dev, eager.efficiency(dev.memory_class)) == eager.efficiency(dev.memory_class)
    back = Calibration.from_query(cal.to_query())  # the link keeps which row it calibrates
    assert back.gpu_id == ryzen.id and back.mem_bw_efficiency == pytest.approx(cal.mem_bw_efficiency, rel=1e-3)


def test_the_user_picks_the_cpu_row_or_the_machine_alone():
    doc = _synthetic_cpu_result(0.8, 0.6, 5.0, name="AMD EPYC")  # a name that names no catalog CPU
    assert fit(doc).gpu_id is None  # only the measured machine
    assert fit(doc, device="amd-ryzen-9-7950x").gpu_id == "amd-ryzen-9-7950x"  # the row the user selects
    assert fit(_synthetic_cpu_result(0.8, 0.6, 5.0), device="").gpu_id is None  # the machine alone, by choice
    for wrong, needle in (("rtx-4090", "is a GPU"), ("epyc-9999", "unknown GPU")):
        with pytest.raises(CalibrationError, match=needle):
            fit(doc, device=wrong)


def test_a_vm_slice_does_not_calibrate_the_whole_cpu():
    doc = _synthetic_cpu_result(0.8, 0.6, 5.0, threads=8)  # 8 logical CPUs of a 32-thread Ryzen 9 7950X
    assert fit(doc).gpu_id is None  # matched by name, but a slice: the measured machine only
    with pytest.raises(CalibrationError, match="slice"):
        fit(doc, device="amd-ryzen-9-7950x")


def test_gpu_and_cpu_calibrations_stay_with_their_own_kind():
    from planner.calibration.fit import Fleet
    gpu_cal, cpu_cal = fit(_synthetic_gpu_result(0.8, 0.6, 5.0)), fit(_synthetic_cpu_result(0.8, 0.6, 5.0))
    fleet = Fleet((cpu_cal, gpu_cal))
    eager = load_runtimes().get("pytorch-eager")
    epyc, h100, ryzen = CATALOG.get("amd-epyc-9654"), CATALOG.get("h100-sxm"), CATALOG.get("amd-ryzen-9-7950x")
    assert fleet.adjust(epyc, eager.efficiency("cpu")) == eager.efficiency("cpu")  # a 4090 fit says nothing of it
    assert fleet.adjust(h100, eager.efficiency("hbm")) == gpu_cal.adjust(h100, eager.efficiency("hbm"))
    assert fleet.adjust(ryzen, eager.efficiency("cpu")) == cpu_cal.adjust(ryzen, eager.efficiency("cpu"))


def test_cli_calibrates_the_cpu_row_it_is_told(tmp_path, capsys):
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(_synthetic_cpu_result(0.8, 0.6, 5.0, name="AMD EPYC")))
    assert main(["estimate", "--model", "cfdna-gen", "--gpu", "amd-ryzen-9-7950x,amd-epyc-9654", "--sequences",
                 "1000", "--calibration", str(path), "--calibration-cpu", "amd-ryzen-9-7950x", "--format",
                 "json"]) == 0
    rows = {r["gpu_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["amd-ryzen-9-7950x"]["efficiency"]["source"].startswith("calibrated: fitted on this CPU")
    assert rows["amd-epyc-9654"]["efficiency"]["source"].startswith("prior")
# ---------------------------------------------------------------- the fit's uncertainty and conditioning

TRUTH = (0.5, 0.7, 6.0)  # bandwidth and compute efficiency (of the measured peaks), launch overhead in us


def _factors(cal):
    return (cal.mem_bw_efficiency, cal.compute_efficiency, cal.overhead_us)


def _within(cal, truth) -> list[bool]:
    """Per factor: the truth lies inside the reported 95 % interval (in log terms: |log(fit / truth)| <= log(1 + e))."""
    return [abs(math.log(v / t)) <= math.log(1 + e / 100) for v, t, e in zip(_factors(cal), truth, cal.fit_err_pct)]


def test_designed_points_recover_known_factors_within_the_reported_uncertainty(example):
    """Times from the planner's own model at TRUTH, with 3 % log-normal noise: the fit must land within its 95 %
    interval. Over 40 noise draws a true 95 % interval misses about 2 times per factor; 6 or more misses would
    happen with probability under 1 % (binomial, n = 40, p = 0.05), so fewer than 6 is required."""
    base = cpu_result(example, model_sizes=())
    misses = [0, 0, 0]
    for seed in range(40):
        cal = fit(with_times(base, *TRUTH, noise=0.03, seed=seed))
        assert cal.unidentified == () and cal.problems() == []  # every factor has points it dominates
        misses = [m + (not ok) for m, ok in zip(misses, _within(cal, TRUTH))]
    assert max(misses) < 6, misses
    # no noise: the fit is exact, and still claims no better than the NOISE_FLOOR of 1 % timing repeatability
    cal = fit(with_times(base, *TRUTH))
    assert _factors(cal) == pytest.approx(TRUTH, rel=0.01) and cal.fit_rms_pct < 0.1
    assert all(0 < e < 10 for e in cal.fit_err_pct)


def test_more_noise_widens_the_interval(example):
    base = cpu_result(example, model_sizes=())
    quiet, loud = fit(with_times(base, *TRUTH, noise=0.02, seed=5)), fit(with_times(base, *TRUTH, noise=0.10, seed=5))
    assert all(b > a for a, b in zip(quiet.fit_err_pct, loud.fit_err_pct))


def test_points_that_cannot_separate_bandwidth_from_overhead_say_so(example):
    """Decode steps of one model at batch 1 differ only in KV position: every one of them spends the same shares of
    its time on the weights' bandwidth and on launches, so no combination of them tells the two apart (a large
    forward pass pins compute, so only those two are confounded). MID is sized so the shares are about even:
    4 layers x (4 x 128^2 + 3 x 128 x 384) = 0.85 M parameters, 3.4 MB, which take 3.4 MB / (0.5 x 9.1 GB/s) =
    0.75 ms, against 53 kernels x 2.5 (pytorch-eager's factor) x 6 us = 0.8 ms of launches."""
    mid = replace(SMALL, id="t-mid", name="t-mid", hidden=128, heads=2, kv_heads=2, ffn=384)
    points = [(mid, "decode", 1, p) for p in (16, 64, 128, 256)] + [(SMALL, "forward", 4, 128)]
    cal = fit(with_times(cpu_result(example, points, model_sizes=()), *TRUTH, noise=0.02, seed=1))
    assert set(cal.unidentified) == {"bandwidth", "overhead"}
    text = " ".join(cal.problems())
    assert "can't separate bandwidth efficiency from per-kernel overhead" in text
    assert "memory-bound steps" in text and "overhead-bound steps" in text  # the measurements that are missing
    # the designed points (a launch-bound and a bandwidth-bound model added) separate them
    cal = fit(with_times(cpu_result(example, DESIGNED, model_sizes=()), *TRUTH, noise=0.02, seed=1))
    assert cal.unidentified == ()


def test_too_few_points_for_three_factors_have_no_uncertainty(example):
    cal = fit(with_times(cpu_result(example, DESIGNED[:3], model_sizes=()), *TRUTH))
    assert cal.fit_err_pct == (1000.0,) * 3 and "only 3 measured points for 3 factors" in " ".join(cal.problems())


def test_students_t_table_matches_its_source():
    # NIST/SEMATECH table 1.3.6.7.2: 12.706 at 1 degree of freedom, 2.228 at 10, 2.042 at 30; the normal 1.96 limit
    assert (T95[1], T95[10], T95[30]) == (12.706, 2.228, 2.042) and FACTORS == ("bandwidth", "compute", "overhead")


def test_uncertainty_and_unpinned_factors_survive_the_link(example):
    cal = fit(with_times(cpu_result(example, [(SMALL, "decode", 1, p) for p in (16, 64, 128)]
                                    + [(SMALL, "forward", 4, 128)], model_sizes=()), *TRUTH, noise=0.02, seed=2))
    back = Calibration.from_query(cal.to_query())
    assert back.fit_err_pct == pytest.approx(cal.fit_err_pct, rel=1e-3) and back.unidentified == cal.unidentified
    assert back.problems() == cal.problems() and back.unidentified
    text = cal.to_query()
    for bent in (text.replace("ill=", "ill=xx."), text.replace(";ebw=", ";ebw=5;ebw="), text.replace(";emm=", ";x=")):
        with pytest.raises(CalibrationError, match="calibration link"):
            Calibration.from_query(bent)
    # a link from before uncertainties were recorded still loads, with none shown
    old = ";".join(p for p in text.split(";") if not p.startswith(("ebw", "emm", "elo", "ill")))
    assert Calibration.from_query(old).fit_err_pct is None


# ---------------------------------------------------------------- your own model: measure here, predict a new size

def test_a_model_run_is_fitted_on_its_own_points_and_the_anchors_fill_the_rest(example):
    """Anchor points at one set of factors, the traced seed-004 GPT-2 at another: the model's times are compute- and
    bandwidth-bound here, so its fit takes bandwidth and compute from its own points and the launch overhead, which
    its steps barely exercise, from the anchors."""
    anchors = with_times(cpu_result(example, model_sizes=()), 0.3, 0.5, 3.0)
    doc = with_times(cpu_result(example), *TRUTH)
    doc["workloads"] = anchors["workloads"]
    cal = fit(doc)
    assert (cal.mem_bw_efficiency, cal.compute_efficiency) == pytest.approx(TRUTH[:2], rel=0.02)
    assert cal.overhead_us == pytest.approx(3.0, rel=0.05) and cal.unidentified == ()
    # without the anchors the overhead is reported as not pinned down
    alone = fit({**doc, "workloads": []})
    assert alone.unidentified == ("overhead",) and "overhead-bound steps" in alone.problems()[0]


def test_holdout_predicts_each_size_from_a_fit_without_it(example):
    doc = with_times(cpu_result(example), *TRUTH)
    rows = holdout_table(doc)
    assert sorted({r["size"] for r in rows}) == [64, 128, 256, 512]
    assert {r["workload"] for r in rows} == {"forward", "train"}
    assert all(abs(r["error_pct"]) < 1.0 for r in rows)  # noise-free: the model is the truth
    noisy = holdout_table(with_times(cpu_result(example), *TRUTH, noise=0.02, seed=4))
    # 2 % noise on the held-out point itself, and on the points fitted: a few percent, far under the 15 % target
    assert all(abs(r["error_pct"]) < 8.0 for r in noisy), [round(r["error_pct"], 1) for r in noisy]
    with pytest.raises(CalibrationError, match="no run 1"):
        holdout_table(doc, run=1)


def test_model_run_points_are_listed_and_tabled(example):
    doc = with_times(cpu_result(example), *TRUTH)
    rows = measured_points(doc)
    runs = [r for r in rows if r["model"] == "seed004-sdpa"]
    assert len(runs) == 8 and runs[0]["label"] == "seed004-sdpa forward b1 tokens=64 fp32" and runs[0]["seq"] == 64
    table = point_table(doc, fit(doc))
    assert len(table) == len(rows)
    assert all(abs(r["calibrated_error_pct"]) < 3 for r in table if r["model"] == "seed004-sdpa")


def test_a_gpu_calibration_of_your_model_predicts_it_on_another_gpu_per_op_group():
    """Measure here, predict there: the traced seed-004 GPT-2 timed (synthetically, at known factors) on an RTX 4090
    in bf16, with decoder anchors at the same factors. On an L4 (the same Ada architecture and GDDR class) the
    calibration carries the fitted fractions unchanged (test_transfer_by_class_...), so the model's time there is its
    traced op groups on the L4's datasheet bandwidth and matmul ceiling at those fractions: 0.8 of the measured
    900 GB/s is 720 / 1008 of the 4090's datasheet bandwidth, 0.6 of the measured 150 TFLOPS is 90 / 165.26 of its
    catalog ceiling (its published matmul figure, data/gpus.yaml)."""
    doc = _synthetic_gpu_result(0.8, 0.6, 5.0)
    doc["schema_version"] = 2
    doc["model_runs"] = [{**model_run(), "precision": "bf16"}]
    doc = with_times(doc, 0.8, 0.6, 5.0)
    cal = fit(parse_result(json.dumps(doc), "gpu.json"))
    rtx, l4 = CATALOG.get("rtx-4090"), CATALOG.get("l4")
    bw_ds, mm_ds = 0.8 * 900 / rtx.mem_bw_gbps, 0.6 * 150 / 165.26
    assert (cal.mem_bw_efficiency, cal.compute_efficiency) == pytest.approx((bw_ds, mm_ds), rel=0.02)
    model = run_model(Record("t", "run", doc["model_runs"][0]))
    # on the L4 (another machine) the model's host dispatch is eager's own: only bandwidth and compute carry
    at_truth = lambda g, e: replace(e, mem_bw_efficiency=bw_ds, compute_efficiency=mm_ds)
    for kind in ("forward", "train"):
        there = predict_seconds(kind, model, 1, 384, "bf16", l4, cal.adjust)  # a size and a GPU never measured
        assert there == pytest.approx(predict_seconds(kind, model, 1, 384, "bf16", l4, at_truth), rel=0.03)
        assert "calibrated" in cal.adjust(l4, load_runtimes().get("pytorch-eager").efficiency("gddr")).source


# ---------------------------------------------------------------- a GPU bench: host dispatch and the wide anchor

H200_RESULT = DATA_DIR / "calibrations" / "2026-11-26_cuda-nvidia-h200.json"


def _h200() -> dict:
    return parse_result(H200_RESULT.read_bytes(), H200_RESULT.name)


def test_a_gpu_bench_pins_bandwidth_only_with_the_wide_anchor():
    """The H200 result's own points, re-timed by the planner's model at known factors (bandwidth 0.7 and compute 0.5 of
    the measured peaks, 12 us of host dispatch per kernel): the fit recovers all three. Without the wide decoder's
    decode steps every decode point is host-bound on an H200 (cfdna-gen streams 264 MB in ~0.1 ms under ~4 ms of
    dispatch), so nothing pins the bandwidth, and the fit says so."""
    doc = with_times(_h200(), 0.7, 0.5, 12.0, noise=0.01, seed=3)
    cal = fit(doc)
    assert cal.unidentified == ()
    bw, mm = measured_factors(cal)
    assert (bw, mm, cal.overhead_us) == pytest.approx((0.7, 0.5, 12.0), rel=0.05)
    narrow = {**doc, "workloads": [w for w in doc["workloads"] if w["model"]["id"] != "bench-wide"]}
    assert "bandwidth" in fit(narrow).unidentified


def test_the_h200_bench_fits_inside_what_its_own_measurements_allow():
    """The committed H200 run (2026-11-26). Its wide decode step at batch 1 moved 4 layers x 809,517,056 weights (their
    norms included), the final norm and the 512 x 8192 tied embedding, 3,242,270,720 x 2 B = 6.4845 GB, in 2.1803 ms:
    at least 2.974 TB/s, 0.6196 of the 4,800 GB/s datasheet, and no more than its measured copy bandwidth, 4,150.4 GB/s
    = 0.8647. Its wide forward pass did 2 x 3,242,270,720 x 2,048 tokens = 13.28 TFLOP of GEMMs in 22.754 ms: at least
    583.6 TFLOP/s, 0.8237 of the 708.5 TFLOPS power-saturated bf16 ceiling of data/gpus.yaml (MSMF), and a bench's
    short passes run at most at the 794.5 TFLOPS burst (boost-clock) ceiling: 1.1214 of it. The compiled decode
    replays a CUDA graph (0.748 ms measured), so the host's dispatch speed, which the fit puts at over 10 us per
    kernel, must not reach it."""
    result = _h200()
    cal = fit(result)
    assert 0.6196 <= cal.mem_bw_efficiency <= 0.8647 and "bandwidth" not in cal.unidentified
    assert 0.8237 <= cal.compute_efficiency <= 794.5 / 708.5 and "compute" not in cal.unidentified
    rows = {r["label"]: r for r in point_table(result, cal)}
    compiled = rows["cfdna-gen decode b16 pos 128 bf16 compiled"]
    assert abs(compiled["calibrated_s"] / compiled["measured_s"] - 1) < 0.10
