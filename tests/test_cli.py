"""CLI: JSON fields, did-you-mean with exit code 2, listings."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from planner.cli import main
from planner.inputs.runtimes import load_runtimes
from tests.fixtures.cli_run import run  # main() in this process; one test below runs the real process

ROOT = Path(__file__).resolve().parent.parent


def test_python_dash_m_planner_and_the_console_command_run_in_their_own_process(tmp_path):
    for command in ([sys.executable, "-m", "planner"], [shutil.which("planner") or "planner"]):
        out = subprocess.run([*command, "estimate", "--gpu", "rtx-4090", "--sequences", "100", "--format", "json"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert [r["gpu_id"] for r in json.loads(out.stdout)] == ["rtx-4090"]
        bad = subprocess.run([*command, "estimate", "--gpu", "rtx-4900"], cwd=tmp_path, capture_output=True,
                             text=True, timeout=120)
        assert bad.returncode == 2 and "did you mean" in bad.stderr and "Traceback" not in bad.stderr


def test_estimate_json_rows_have_the_documented_fields():
    out = run("estimate", "--model", "cfdna-gen", "--gpu", "rtx-4090", "--gpu", "v100-sxm2-16gb", "--precision", "bf16",
              "--price-tier", "community", "--sequences", "1000", "--format", "json")
    assert out.returncode == 0, out.stderr
    rows = {r["gpu_id"]: r for r in json.loads(out.stdout)}
    for key in ("gpu_id", "gpu_name", "feasible", "reasons", "seconds", "step_time_breakdown_s", "bound",
                "items_per_s", "tokens_per_s", "cost_usd", "memory_gb", "batch"):
        assert key in rows["rtx-4090"]
    assert rows["rtx-4090"]["feasible"] and rows["rtx-4090"]["seconds"] > 0
    assert not rows["v100-sxm2-16gb"]["feasible"] and "SM80" in rows["v100-sxm2-16gb"]["reasons"][0]["text"]


def test_unknown_names_exit_2_with_a_suggestion_and_no_traceback():
    for args, needle in ((["--gpu", "rtx-4900"], "rtx-4090"), (["--model", "lama-3-8x"], "llama-3-8b"),
                         (["--precision", "bf61"], "bf16")):
        out = run("estimate", *args)
        assert out.returncode == 2 and "did you mean" in out.stderr and needle in out.stderr
        assert "Traceback" not in out.stderr


def test_parallel_flag_plans_tensor_parallel_and_explains_the_link():
    args = ("estimate", "--model", "llama-2-7b", "--gpus", "2", "--gpu", "rtx-4090", "--sequences", "10", "--format",
            "json")
    auto = json.loads(run(*args).stdout)[0]
    tp = json.loads(run(*args, "--parallel", "tensor").stdout)[0]
    assert auto["parallelism"] == "data" and tp["parallelism"] == "tensor"
    assert any("PCIe without peer-to-peer" in r["text"] for r in tp["reasons"])
    decode = next(p for p in tp["phases"] if p["name"] == "decode")
    assert decode["communication_s"] > 0 and decode["communication_hidden_s"] == 0 and "2 GPUs over" in decode["link"]
    bad = run(*args, "--parallel", "pipeline")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "--parallel: unknown value 'pipeline'; expected one of auto, data, tensor" in bad.stderr
    train = run("estimate", "--model", "llama-2-7b", "--workload", "train", "--gpus", "2", "--parallel", "tensor")
    assert train.returncode == 2 and "sharding fsdp" in train.stderr and "Traceback" not in train.stderr


def test_csv_and_listings():
    out = run("estimate", "--gpu", "h100-sxm", "--sequences", "100", "--format", "csv")
    assert out.returncode == 0 and out.stdout.splitlines()[0].startswith("gpu_id,")
    assert "rtx-4090" in run("gpus").stdout
    models = json.loads(run("models", "--format", "json").stdout)
    assert any(m["id"] == "cfdna-gen" and m["params"] == 132_192_000 for m in models)


def test_model_from_a_missing_file_is_a_clear_error(tmp_path):
    out = run("estimate", "--model", str(tmp_path / "nope.yaml"))
    assert out.returncode == 2 and "cannot read" in out.stderr


def test_counts_are_checked_against_the_job_bounds_not_rounded_or_overflowed():
    for args, needle in ((["--sequences", "inf"], "finite"), (["--sequences", "1.9"], "whole number"),
                         (["--sequences", "1e300"], "between 1 and 1e+12"), (["--gpus", "0"], "between 1 and 1024"),
                         (["--workload", "train", "--epochs", "nan"], "--epochs: expected a finite number")):
        out = run("estimate", "--gpu", "h100-sxm", *args)
        assert out.returncode == 2 and needle in out.stderr and "Traceback" not in out.stderr, (args, out.stderr)
    assert main(["estimate", "--gpu", "h100-sxm", "--sequences", "1_000", "--format", "json"]) == 0  # 1,000 reads


def test_a_model_path_that_is_not_a_regular_file_is_refused(tmp_path):
    import os
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)  # reading it would block forever
    for path in ("/dev/zero", str(fifo), str(tmp_path)):
        out = run("estimate", "--model", path, "--gpu", "h100-sxm")
        assert out.returncode == 2 and "not a regular file" in out.stderr, out.stderr


def test_serve_lists_each_concurrency_and_the_largest_within_the_target():
    out = run("serve", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--runtime", "vllm", "--prompt-tokens", "512",
              "--gen-tokens", "256", "--concurrency", "1,8", "--tpot-ms", "30", "--format", "json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert [r["concurrency"] for r in rows[:2]] == [1, 8]
    best = rows[-1]
    assert best["note"] == "largest within the target" and best["tpot_ms"] <= 30 and best["concurrency"] > 8
    assert rows[1]["tokens_per_s"] > rows[0]["tokens_per_s"]


def test_serve_at_a_rate_answers_with_a_deployment_its_runner_ups_and_a_hand_off(skypilot):
    out = run("serve", "--model", "llama-3-8b", "--gpu", "h100-sxm,l40s", "--rate", "20", "--slo-ttft-p95", "500",
              "--slo-tpot-p95", "50", "--input-tokens", "512", "--output-tokens", "256", "--format", "json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    best = doc["best"]
    assert best["per_replica"]["meets_slo"] and best["per_replica"]["ttft_p95_ms"] <= 500
    assert best["per_replica"]["rate_rps"] == pytest.approx(20 / best["replicas"], rel=1e-3)
    assert all(r["why"] for r in doc["runner_ups"]) and len(doc["sweep_per_replica"]) == 8
    assert doc["launch_command"].split()[0] in ("vllm", "python", "trtllm-serve", "llama-server")
    parsed = skypilot.parse(doc["skyserve_yaml"])
    assert "error" not in parsed and parsed["service"]["replica_policy"]["min_replicas"] == best["replicas"]


@pytest.mark.parametrize("args, words", [(("--rate", "0"), "--rate"), (("--rate", "1e9"), "--rate"),
                                         (("--rate", "5", "--runtimes", "vlm"), "--runtimes"),
                                         (("--rate", "5", "--slo-tpot-p95", "nan"), "--slo-tpot-p95")])
def test_serve_refuses_bad_rates_and_names_the_option(args, words):
    out = run("serve", "--model", "llama-3-8b", "--gpu", "h100-sxm", *args)
    assert out.returncode == 2 and words in out.stderr and "Traceback" not in out.stderr


def test_serve_refuses_a_huge_or_malformed_trace_by_name(tmp_path):
    huge = tmp_path / "huge.csv"
    with huge.open("w") as f:  # 10^7 rows would be 40 MB: the size cap refuses it before parsing
        f.write("512,128\n" * 1_000_000)
    bad = tmp_path / "bad.csv"
    bad.write_text("input,output\n512,128\n512;128\n")
    for path, words in ((huge, "larger than"), (bad, "line 3")):
        out = run("serve", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--rate", "5", "--trace", str(path))
        assert out.returncode == 2 and "--trace" in out.stderr and words in out.stderr, out.stderr


def test_a_hugging_face_id_is_fetched_and_an_offline_miss_is_a_clear_error(tmp_path):
    import os
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path)}  # empty cache, no network
    out = subprocess.run([sys.executable, "-m", "planner", "estimate", "--model", "meta-llama/Meta-Llama-3-8B",
                          "--gpu", "h100-sxm"], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 2 and "offline mode" in out.stderr and "Traceback" not in out.stderr


def test_launch_writes_a_task_skypilot_accepts(tmp_path, skypilot):
    out = tmp_path / "task.yaml"
    done = run("launch", "--model", "cfdna-gen", "--price-tier", "community", "--out", str(out))
    assert done.returncode == 0, done.stderr
    task = skypilot.parse(out.read_text())
    assert len(task["resources"]) >= 3 and "sky launch" in out.read_text().splitlines()[0]


def test_launch_quotes_the_plan_keeps_local_paths_out_and_maps_its_options(tmp_path, skypilot):
    """A model file in a folder whose name a shell or YAML would misread, a run and a workdir of the same kind: the
    task SkyPilot parses carries the run as typed, the workdir, and a plan command a shell splits back into the plan's
    words with the file's name only."""
    import shlex
    from planner.views.launch import DEFAULT_IMAGE
    model = tmp_path / "a; rm -rf {x} : # b" / "m$(id)`x`.yaml"
    model.parent.mkdir()
    model.write_text("id: tiny\nname: 'Tiny $(id) : #'\n"
                     "kind: decoder\nlayers: 2\nhidden: 64\nheads: 4\nkv_heads: 4\nffn: 256\nffn_kind: swiglu\n"
                     "vocab: 100\ncontext: 128\ntied_embeddings: true\nnorm: rmsnorm\nlearned_pos_emb: false\n"
                     "bias: false\nsource: test\n")
    run_text = "python gen.py --tag \"$(date)\" ; echo `id` && echo 'a: # {}'"
    out = tmp_path / "task.yaml"
    done = run("launch", "--model", str(model), "--sequences", "100", "--price-tier", "community", "--run", run_text,
               "--workdir", str(model.parent), "--image", DEFAULT_IMAGE, "--autostop", "30", "--out", str(out))
    assert done.returncode == 0, done.stderr
    parsed = skypilot.parse(out.read_text())
    assert "error" not in parsed, parsed
    assert parsed["run"] == run_text and parsed["workdir"] == str(model.parent)
    assert all(r["autostop"] == {"idle_minutes": 30, "down": True} for r in parsed["resources"])
    plan = shlex.split(parsed["envs"]["PLANNER_PLAN"])
    assert plan == ["python", "-m", "planner", "estimate", "--model", model.name, "--sequences", "100",
                    "--price-tier", "community"]
    assert str(tmp_path) not in parsed["envs"]["PLANNER_PLAN"] and "named without its local path" in done.stderr
    off = run("launch", "--model", "gpt2-124m", "--no-autostop", "--run", "python gen.py")
    import yaml
    assert "autostop" not in yaml.safe_load(off.stdout)["resources"] and "no autostop" in off.stderr
    bad = run("launch", "--model", "gpt2-124m", "--image", "img; rm -rf ~")
    assert bad.returncode == 2 and "not a container image reference" in bad.stderr and "Traceback" not in bad.stderr
    missing = run("launch", "--model", "gpt2-124m", "--workdir", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "no such folder" in missing.stderr


def test_launch_runpod_prints_a_v2_body_and_the_curl_that_posts_it(tmp_path):
    import shlex
    out = tmp_path / "pod.json"
    done = run("launch", "--format", "runpod", "--model", "cfdna-gen", "--price-tier", "secure", "--out", str(out))
    assert done.returncode == 0, done.stderr
    pod = json.loads(out.read_text())
    assert pod["cloud"] == "SECURE" and set(pod["gpu"]) == {"id", "count"} and "gpuTypeIds" not in pod
    assert shlex.split(pod["env"]["PLANNER_PLAN"]) == ["python", "-m", "planner", "estimate", "--model", "cfdna-gen",
                                                       "--price-tier", "secure"]
    curl = next(line for line in done.stderr.splitlines() if "curl" in line).split("v2: ", 1)[1]
    words = shlex.split(curl)
    assert "https://api.runpod.io/v2/pods" in words and words[-1] == f"@{out}"
    assert "next in the planner's order" in done.stderr  # the GPU types to try when the first has none free
    spot = run("launch", "--format", "runpod", "--model", "cfdna-gen", "--price-tier", "spot")
    assert spot.returncode == 2 and "no spot" in spot.stderr and "Traceback" not in spot.stderr


def test_launch_bench_writes_a_task_per_gpu_and_a_fleet_script_with_idle_autodown(tmp_path):
    out = tmp_path / "fleet"
    done = run("launch", "--bench", "--model", "cfdna-gen", "--autostop", "30", "--out", str(out))
    assert done.returncode == 0, done.stderr
    script = (out / "run_fleet.sh").read_text()
    tasks = sorted(p.stem for p in out.glob("*.yaml"))
    starts = sorted(line.split()[1] for line in script.splitlines() if line.startswith("start "))
    assert tasks and starts == tasks and "IDLE_MIN=30" in script.splitlines()
    assert subprocess.run(["bash", "-n", str(out / "run_fleet.sh")]).returncode == 0  # bash reads it
    kept = run("launch", "--bench", "--model", "cfdna-gen", "--no-autostop", "--out", str(tmp_path / "b"))
    assert kept.returncode == 0 and "keep autodown" in kept.stderr
    assert "IDLE_MIN=10" in (tmp_path / "b" / "run_fleet.sh").read_text().splitlines()


def test_estimate_says_how_old_the_prices_are_and_when_the_cheapest_rests_on_a_stale_one():
    from datetime import UTC, datetime
    from planner.inputs.facts import load_facts
    from planner.inputs.price_snapshot import snapshot_table
    price = snapshot_table(load_facts().catalog).prices["rtx-a5000"]["community"]
    age = (datetime.now(UTC).date() - price.date).days
    args = ("estimate", "--gpu", "rtx-a5000", "--gpu", "v100-sxm2-16gb", "--price-tier", "community",
            "--sequences", "1000")
    out = run(*args)  # a table with a GPU that can't run the plan (bf16 on SM70) still prints
    assert out.returncode == 0 and "v100-sxm2-16gb" in out.stdout, out.stderr
    assert "2 prices dated" in out.stderr
    if age > 90:
        assert f"rests on a price from {price.date.isoformat()} ({age:,} days old)" in out.stderr
    quiet = run(*args, "--stale-after-days", str(age + 1), "--format", "csv")
    assert "rests on" not in quiet.stderr and "none older than" in quiet.stderr
    import csv
    row = next(csv.DictReader(quiet.stdout.splitlines()))
    assert row["price_age_days"] == str(age) and row["price_stale"] == "False"
    bad = run(*args, "--stale-after-days", "0")
    assert bad.returncode == 2 and "between 1 and 3650" in bad.stderr and "Traceback" not in bad.stderr


def test_launch_lists_the_gpus_in_the_order_estimate_ranks_them():
    """Both rank by what the whole job bills; a short job makes that order differ from compute cost alone."""
    import yaml
    from planner.inputs.launch_names import load_multi_node_names, load_skypilot_names
    plan = ("--model", "cfdna-gen", "--sequences", "10000", "--price-tier", "community")
    rows = json.loads(run("estimate", *plan, "--format", "json").stdout)
    names, elsewhere = load_skypilot_names(), load_multi_node_names()
    nvidia = {g["id"] for g in json.loads(run("gpus", "--format", "json").stdout) if g["vendor"] == "NVIDIA"}
    # SkyPilot rents RunPod's secure cloud only: a community-only GPU under a RunPod-only name is left out
    rentable = lambda r: r["cost_usd"]["secure"] is not None or names[r["gpu_id"]] in elsewhere  # noqa: E731
    expected = list(dict.fromkeys(names[r["gpu_id"]] for r in rows if r["feasible"] and r["gpu_id"] in names
                                  and r["gpu_id"] in nvidia and rentable(r)))[:8]
    by_compute = [r["gpu_id"] for r in sorted((r for r in rows if r["feasible"]),
                                              key=lambda r: r["cost_usd"]["community"] or 1e9)]
    assert by_compute[:3] != [r["gpu_id"] for r in rows if r["feasible"]][:3]  # the two orders do differ here
    task = yaml.safe_load(run("launch", *plan).stdout)
    assert [next(iter(r["accelerators"])) for r in task["resources"]["ordered"]] == expected


# ---------------------------------------------------------------- CPU devices

SEED_002 = ("--model", "llm-7b-seed002", "--sequences", "1", "--prompt-tokens", "100", "--gen-tokens", "100",
            "--batch", "1", "--precision", "bf16", "--format", "json")


def test_cpus_are_named_like_gpus_and_say_they_run_on_the_cpu():
    for names in (("--gpus", "amd-ryzen-9-7950x,rtx-5090"), ("--gpu", "amd-ryzen-9-7950x,rtx-5090"),
                  ("--gpu", "7950x", "--gpu", "rtx 5090")):
        out = run("estimate", *SEED_002, *names)
        assert out.returncode == 0, out.stderr
        rows = {r["gpu_id"]: r for r in json.loads(out.stdout)}
        assert set(rows) == {"amd-ryzen-9-7950x", "rtx-5090"}
    cpu = rows["amd-ryzen-9-7950x"]
    assert cpu["device_kind"] == "cpu" and cpu["feasible"] and cpu["gpus"] == 1
    assert any(r["code"] == "device" and "runs on the CPU" in r["text"] for r in cpu["reasons"])
    # bf16 weights of Llama-2-7B (13.2 GB streamed per token) over 83.2 GB/s x 0.6: about 3.7 tokens/s
    assert 3.5 < cpu["tokens_per_s"] < 3.8
    # the RTX 5090 in eager PyTorch waits for Python's dispatch at batch 1: (32 layers x 12 + 5) kernels x 2.5 eager
    # factor x the profile's CPU time per kernel (tuned: data/runtimes_tuned.yaml) per token, still ~8x the CPU
    host_us = load_runtimes().get("pytorch-eager").efficiency("gddr").host_us_per_kernel
    assert rows["rtx-5090"]["tokens_per_s"] == pytest.approx(1 / ((32 * 12 + 5) * 2.5 * host_us * 1e-6), rel=0.03)
    assert rows["rtx-5090"]["tokens_per_s"] > 5 * cpu["tokens_per_s"]


def test_include_cpu_adds_every_cpu_and_the_default_has_none():
    cpu_ids = {"amd-epyc-9654", "amd-epyc-7763", "intel-xeon-8480-plus", "amd-ryzen-9-7950x"}
    default = {r["gpu_id"] for r in json.loads(run("estimate", *SEED_002).stdout)}
    assert not default & cpu_ids
    assert cpu_ids <= {r["gpu_id"] for r in json.loads(run("estimate", *SEED_002, "--include-cpu").stdout)}
    listed = {g["id"] for g in json.loads(run("gpus", "--include-cpu", "--format", "json").stdout)}
    assert cpu_ids <= listed and not cpu_ids & {g["id"] for g in json.loads(run("gpus", "--format", "json").stdout)}


def test_serving_on_a_cpu_with_a_gpu_only_runtime_says_why():
    out = run("serve", "--model", "llama-3-8b", "--gpu", "amd-epyc-9654,h100-sxm", "--runtime", "vllm",
              "--concurrency", "1", "--format", "json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert any(r["gpu"] == "amd-epyc-9654" and "does not run on a CPU" in r["note"] for r in rows)
    assert any(r["gpu"] == "h100-sxm" and r["tokens_per_s"] for r in rows)
def test_the_memory_target_is_a_cli_option_and_its_bounds_are_checked():
    base = ("estimate", "--model", "cfdna-gen", "--gpu", "l40s", "--sequences", "1000000", "--format", "json")
    at90 = json.loads(run(*base).stdout)[0]
    at100 = json.loads(run(*base, "--memory-target", "100").stdout)[0]
    reported = 46068 * 2**20 / 1e9  # an L40S reports 46,068 MiB with ECC on
    assert at90["usable_gb"] == round(0.9 * reported, 4) and at100["usable_gb"] == round(reported, 4)
    assert at90["memory_gb"]["total"] <= at90["usable_gb"] < at100["memory_gb"]["total"] <= reported
    bad = run(*base, "--memory-target", "120")
    assert bad.returncode == 2 and "memory" in bad.stderr and "Traceback" not in bad.stderr
def test_a_pinned_pytorch_build_runs_some_gpus_and_not_others():
    out = run("estimate", "--model", "sea", "--workload", "infer", "--samples", "10", "--input-size", "1000",
              "--precision", "fp32", "--attention", "manual", "--batch", "1", "--pytorch", "1.13.1+cu116",
              "--gpu", "rtx-a5000", "--gpu", "h100-sxm", "--format", "json")
    assert out.returncode == 0, out.stderr
    rows = {r["gpu_id"]: r for r in json.loads(out.stdout)}
    # RTX A5000 is sm_86, in 1.13.1+cu116's list; H100 is sm_90, not in it (sm_37 ... sm_86)
    assert rows["rtx-a5000"]["feasible"] and not rows["h100-sxm"]["feasible"]
    assert any(r["code"] == "pytorch_build" and r["blocking"] and "SM90" in r["text"]
               for r in rows["h100-sxm"]["reasons"])


def test_an_unknown_pytorch_version_exits_2_listing_the_known_builds():
    out = run("estimate", "--gpu", "t4", "--pytorch", "1.13.1+cu999")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "unknown PyTorch build '1.13.1+cu999'" in out.stderr and "1.13.1 (+cu116, +cu117)" in out.stderr


def test_backends_lists_the_kernel_each_architecture_gets():
    out = run("backends", "--precision", "fp16", "--head-dim", "64", "--format", "json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    rows = {r["arch"]: r for r in doc["matrix"]}
    # SDPA flash kernel: [sm80, sm121]; FA2: SM80-SM100; FA1: SM75-SM90; FA3: SM90 only
    assert rows["SM75"]["sdpa"] == "sdpa-efficient" and rows["SM75"]["flash-attn"] == "yes"
    assert rows["SM86"]["sdpa"] == "sdpa-flash" and rows["SM86"]["flash-attn-3"] == "no"
    assert rows["SM120"]["flash-attn-2"] == "no" and rows["SM120"]["sdpa"] == "sdpa-flash"
    assert rows["SM90"]["flash-attn-3"] == "yes" and rows["SM90"]["oldest_pytorch"] == "2.0.1+cu118"
    memory = {b["backend"]: b["memory"] for b in doc["backends"]}
    assert memory["manual"] == "O(S^2) scores" and memory["flash-attn-2"] == "O(S)"


def test_models_list_active_parameters_and_an_encoder_config_cannot_generate_exit_2(tmp_path):
    models = {m["id"]: m for m in json.loads(run("models", "--format", "json").stdout)}
    # Mixtral-8x7B: 46.7B in memory, 12.9B per token (Mistral AI; by hand in tests/inputs/test_models.py)
    assert (models["mixtral-8x7b"]["params"], models["mixtral-8x7b"]["active_params"]) == (46_702_792_704,
                                                                                           12_879_925_248)
    assert models["llama-3-8b"]["active_params"] == models["llama-3-8b"]["params"]  # dense: every weight is used
    config = tmp_path / "config.json"  # google-bert/bert-base-uncased config.json, the fields that matter
    config.write_text(json.dumps({"architectures": ["BertForMaskedLM"], "model_type": "bert", "hidden_size": 768,
                                  "num_attention_heads": 12, "num_hidden_layers": 12, "vocab_size": 30522,
                                  "max_position_embeddings": 512, "intermediate_size": 3072}))
    out = run("estimate", "--model", str(config), "--gpu", "h100-sxm")  # the default job generates
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "cannot (encoder profile): use infer or train" in out.stderr
    infer = run("estimate", "--model", str(config), "--gpu", "h100-sxm", "--workload", "infer", "--format", "json")
    assert infer.returncode == 0 and json.loads(infer.stdout)[0]["feasible"]


def test_own_puts_your_cards_on_top_with_owning_vs_renting():
    out = run("estimate", "--model", "cfdna-gen", "--sequences", "1000", "--gpu", "rtx-4090", "--price-tier",
              "community", "--own", "rtx-a5000:3:1000", "--own-assumption", "lifetime_years=5",
              "--own-assumption", "utilization=0.5", "--own-assumption", "usd_per_kwh=0.2", "--format", "json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    mine, theirs = rows[0], rows[1]
    assert mine["yours"] == "rtx-a5000:3" + ":1000" and mine["gpus"] == 3 and theirs["gpu_id"] == "rtx-4090"
    assert mine["own_fixed_usd_per_month"] == 50  # 3 cards x $1000 / (5 years x 12 months)
    assert mine["own_power_kw"] == 0.345  # 3 x 230 W (A5000 TDP, data/gpus.yaml) x 0.5 / 1000
    rent = mine["rent_usd_per_h"]  # 3 x the A5000's community $/GPU-h
    assert abs(mine["break_even_h_per_month"] - 50 / (rent - 0.345 * 0.2)) < 0.1
    assert "your GPUs" in out.stderr and "ownership.yaml" in out.stderr


def test_a_bad_own_value_exits_2_naming_it():
    out = run("estimate", "--own", "rtx-a5000:zero")
    assert out.returncode == 2 and "rtx-a5000:zero" in out.stderr and "Traceback" not in out.stderr


def _synthetic_measurements(tmp_path: Path) -> Path:
    """Four llama.cpp decode rows from two made-up labs (values arbitrary: the listing is under test, not the fit)."""
    import yaml
    rows = [{"id": f"syn-{i}", "gpu": gpu, "gpus": 1, "model": "llama-3-8b", "regime": "decode",
             "framework": "llama.cpp", "precision": "fp16", "weight_bits": 16, "batch": 1, "prompt_tokens": 0,
             "gen_tokens": 512, "seq_len": None, "metric": "tokens_per_s", "value": value, "source": source,
             "conditions": "synthetic"}
            for i, (gpu, value, source) in enumerate((("rtx-4090", 50.0, "lab-a/bench:README.md"),
                                                      ("rtx-3090", 40.0, "lab-a/bench:README.md"),
                                                      ("rtx-a6000", 35.0, "lab-b/notes:results.md"),
                                                      ("rtx-a5000", 30.0, "lab-b/notes:results.md")))]
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump({"schema_version": 1, "rows": rows}, sort_keys=False), encoding="utf-8")
    return path


def test_validate_by_source_rows_lists_every_rows_held_out_prediction(tmp_path):
    path = _synthetic_measurements(tmp_path)
    table = run("validate", "--by-source", "--rows", "--measurements", str(path))
    assert table.returncode == 0, table.stderr
    listing = table.stdout.split("every row's leave-one-source-out prediction")[1]
    assert all(f"syn-{i}" in listing for i in range(4)) and "speed_bias_pct" in listing
    data = json.loads(run("validate", "--by-source", "--rows", "--format", "json", "--measurements", str(path)).stdout)
    assert {r["row"] for r in data["rows"]} == {f"syn-{i}" for i in range(4)}
    assert {r["source"] for r in data["rows"]} == {"lab-a/bench", "lab-b/notes"}
    for r in data["rows"]:  # on throughput rows the bias on speed is the error itself
        assert r["speed_bias_pct"] == r["error_pct"] and r["set"] == "leave-one-source-out"
    assert any(s["set"] == "leave-one-source-out" and s["key"] == "all" for s in data["summary"])


def test_profile_without_torch_says_what_to_install_and_exits_2():
    """torch is an extra (the bench and the profiler); without it `planner profile` names the install command."""
    code = ("import sys; sys.modules['torch'] = None\n"  # as if torch were not installed: importing it fails
            "from planner.cli import main\n"
            "sys.exit(main(['profile', 'examples/models/gpt2.py:build', '--input', 'tokens=32,64']))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert 'pip install ".[bench]"' in out.stderr


def test_device_files_and_fifos_are_refused_on_every_path_option(tmp_path):
    import os
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)  # reading it would block forever
    for path in ("/dev/zero", "/dev/urandom", str(fifo), str(tmp_path)):
        for args in (("calibration", path), ("estimate", "--calibration", path, "--gpu", "h100-sxm"),
                     ("validate", "--measurements", path)):
            out = run(*args)
            assert out.returncode == 2 and path in out.stderr and "not a regular file" in out.stderr, (args, out.stderr)


@pytest.mark.parametrize("option, value", [("--max-seconds", "inf"), ("--max-seconds", "nan"),
                                           ("--max-host-gb", "1e999"), ("--tolerance", "-1")])
def test_profile_limits_are_finite_numbers_within_their_bounds(option, value):
    out = run("profile", "examples/models/gpt2.py:build", "--input", "tokens=32,64,128", option, value)
    assert out.returncode == 2 and f"argument {option}:" in out.stderr and "Traceback" not in out.stderr


def test_options_are_taken_only_by_their_full_names():
    out = run("estimate", "--gpu", "h100-sxm", "--sequen", "100")
    assert out.returncode == 2 and "unrecognized arguments: --sequen" in out.stderr


def test_a_gpu_you_describe_is_ranked_with_the_rest_and_a_bad_one_is_named():
    mine = "name=My ASIC;mem=64;memtype=hbm;bw=1600;fp32=50;bf16=400;cc=unknown;usd=1.2"
    out = run("estimate", "--my-gpu", mine, "--model", "llama-3-8b", "--sequences", "1000", "--format", "json")
    assert out.returncode == 0, out.stderr
    rows = {r["gpu_id"]: r for r in json.loads(out.stdout)}
    assert rows["own-my-asic"]["gpu_name"] == "My ASIC (yours)" and rows["own-my-asic"]["feasible"]
    assert "h100-sxm" in rows  # ranked with the catalog, not instead of it
    bad = run("estimate", "--my-gpu", mine.replace("bw=1600", "bw=16000000"))
    assert bad.returncode == 2 and "your GPU's bw" in bad.stderr and "Traceback" not in bad.stderr


def test_a_gpu_you_describe_in_a_yaml_file_is_ranked_and_a_missing_file_is_named(tmp_path):
    path = tmp_path / "asic.yaml"
    path.write_text("name: My ASIC\nmemory_gb: 64\nmemory_type: hbm\nmem_bw_gbps: 1600\n"
                    "dense_tflops: {fp32: 50, bf16: 400}\ncompute_capability: unknown\nusd_hr: 1.2\n")
    out = run("estimate", "--my-gpu", str(path), "--gpu", "own-my-asic", "--format", "json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)[0]["gpu_name"] == "My ASIC (yours)"
    missing = run("estimate", "--my-gpu", str(tmp_path / "none.yaml"))
    assert missing.returncode == 2 and "no such file" in missing.stderr and "Traceback" not in missing.stderr


def test_sharding_takes_the_zero_stages_and_auto():
    args = ("estimate", "--model", "llama-2-7b", "--workload", "train", "--gpus", "8", "--gpu", "a100-sxm-80gb",
            "--format", "json")
    auto = json.loads(run(*args, "--sharding", "auto").stdout)[0]
    assert auto["parallelism"] in ("zero1", "zero2", "fsdp")  # DDP's 18 B/param of a 7B model cannot fit 80 GB
    assert auto["reasons"][0]["text"].startswith("sharding auto:") and "did not fit: ddp" in auto["reasons"][0]["text"]
    assert json.loads(run(*args, "--sharding", "zero2").stdout)[0]["parallelism"] == "zero2"
    one = run("estimate", "--model", "llama-2-7b", "--workload", "train", "--gpus", "1", "--sharding", "zero2")
    assert one.returncode == 2 and "sharding zero2" in one.stderr and "Traceback" not in one.stderr
    bad = run(*args, "--sharding", "zero4")
    assert bad.returncode == 2 and "--sharding: unknown value 'zero4'" in bad.stderr


def test_a_training_layout_and_global_batch_from_flags():
    args = ("estimate", "--model", "llama-2-7b", "--workload", "train", "--samples", "512", "--input-size", "2048",
            "--gpus", "8", "--gpu", "h100-sxm", "--format", "json")
    row = json.loads(run(*args, "--layout", "tp=2,pp=2", "--sharding", "zero1", "--global-batch", "64",
                         "--batch", "4").stdout)[0]
    assert row["parallelism"] == "zero1 with tp=2,pp=2" and row["batch"] == 4
    # 64 samples per step over 2 data-parallel ranks at micro-batch 4: m = 8; 1F1B bubble (2-1)/(8+2-1) = 1/9
    assert row["layout"] == {"tp": 2, "pp": 2, "virtual_stages": 1, "cp": 1, "dp": 2, "micro_batch": 4,
                             "micro_batches_per_step": 8, "global_batch": 64, "bubble_fraction": 0.1111}
    assert any("TP 2 (+SP) x PP 2 (1F1B) x DP 2" in r["text"] for r in row["reasons"])
    # 8 GPUs do not split into tp 3 copies; a micro-batch of 64 x 2 ranks is above the global batch of 64
    bad = run(*args, "--layout", "tp=3")
    assert bad.returncode == 2 and "layout: tp 3 x pp 1 x cp 1 = 3 GPUs" in bad.stderr and "Traceback" not in bad.stderr
    over = run(*args, "--layout", "tp=2,pp=2", "--global-batch", "64", "--batch", "64")
    assert over.returncode == 2 and "above the global batch 64" in over.stderr
    typo = run(*args, "--layout", "dp=2")
    assert typo.returncode == 2 and "--layout" in typo.stderr and "'dp=2' is not a degree" in typo.stderr
