"""The CLI's parser: every subcommand and its options. Each subcommand's handler is named here by module and
function (COMMANDS) and its module is imported only when that subcommand runs, as pip does with its commands: the
chart library behind `validate` and torch behind `profile` cost `estimate` nothing."""

from __future__ import annotations

import argparse

from planner.cli.options import (Parser, add_plan_args, bounded, concurrencies, key_value, milliseconds, number_in,
                                 owned, stale_days)
from planner.clients.live_prices import API_KEY_ENV, RUNPOD_GRAPHQL_URL
from planner.inputs.catalog import STALE_AFTER_DAYS
from planner.inputs.ownership import LIMITS as OWN_LIMITS
from planner.inputs.price_snapshot import PRICES_DIR
from planner.inputs.serving_trace import LENGTH_SPREADS
from planner.inputs.runtimes import TUNED_FILE
from planner.validation.measured import MEASUREMENTS_FILE, PREDICTIONS_DIR
from planner.validation.uncertainty import UNCERTAINTY_FILE
from planner.views.launch import DEFAULT_AUTOSTOP_MIN, MAX_AUTOSTOP_MIN, RUN_PLACEHOLDER
from planner.views.report import NARROW_WIDTH

MAX_TRACE_SECONDS = 86_400  # a profile trace runs a few sizes of one model: a day is far past any real one
MAX_HOST_GB = 1_024  # host memory a trace may take beyond torch: no machine here has more

# subcommand -> (module, function): the function takes the parsed options and returns the exit code
COMMANDS = {
    "estimate": ("planner.cli.estimate", "cmd_estimate"),
    "gpus": ("planner.cli.listings", "cmd_gpus"),
    "models": ("planner.cli.listings", "cmd_models"),
    "runtimes": ("planner.cli.listings", "cmd_runtimes"),
    "backends": ("planner.cli.listings", "cmd_backends"),
    "serve": ("planner.cli.serve", "cmd_serve"),
    "launch": ("planner.cli.launch", "cmd_launch"),
    "prices": ("planner.cli.prices", "cmd_prices"),
    "validate": ("planner.cli.validate", "cmd_validate"),
    "profile": ("planner.cli.profile", "cmd_profile"),
    "calibration": ("planner.cli.calibration", "cmd_calibration"),
}


def _formatted(sub, name: str, text: str, formats=("table", "json", "csv")) -> argparse.ArgumentParser:
    p = sub.add_parser(name, help=text)
    p.add_argument("--format", choices=formats, default="table")
    return p


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m planner", description="Rank GPUs by time, cost and feasibility.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = _formatted(sub, "estimate", "estimate a job on every GPU (or --gpu ...)")
    add_plan_args(p)
    p.add_argument("--wide", action="store_true", help="the table with every column (default: the columns that "
                   f"decide a rental, {NARROW_WIDTH} characters wide; json and csv always have every column)")
    p.add_argument("--stale-after-days", type=stale_days, default=STALE_AFTER_DAYS,
                   help=f"flag prices older than this many days (default {STALE_AFTER_DAYS})")
    p.add_argument("--own", type=owned, action="append", default=None, metavar="GPU:COUNT[:USD]",
                   help="GPUs you own, e.g. rtx-a5000:3 (repeatable or comma-separated; :USD = price paid per card): "
                        "rows on top with the plan on all of them, and owning vs renting them")
    p.add_argument("--own-assumption", type=key_value(OWN_LIMITS), action="append", default=None,
                   metavar="KEY=VALUE",
                   help=f"change an owning assumption (data/ownership.yaml): {', '.join(OWN_LIMITS)}")
    p = _formatted(sub, "gpus", "list the GPU catalog (--include-cpu: and the CPU devices)")
    p.add_argument("--include-cpu", action="store_true", help="also list the CPU devices of data/cpus.yaml")
    _formatted(sub, "models", "list model presets")
    _formatted(sub, "runtimes", "list the runtimes (data/runtimes.yaml): the jobs each runs, and for training its "
               "layouts and the share of data-parallel collectives it overlaps per layout")
    p = _formatted(sub, "backends", "attention backends per GPU architecture (which kernel each compute "
                   "capability gets, O(S) or O(S^2) memory, speed vs FlashAttention-2)")
    p.add_argument("--precision", default="fp16", help="the plan's precision: attention runs in its activation dtype")
    p.add_argument("--head-dim", type=bounded("input_size"), default=64, help="the model's head dim (default 64)")
    p.add_argument("--pytorch", default=None, help="a pinned PyTorch build or version (SDPA needs 2.0+)")

    p = _formatted(sub, "serve", "serving an LLM: TTFT, TPOT, tokens/s and $/1M tokens per concurrency")
    add_plan_args(p)
    p.add_argument("--concurrency", type=concurrencies, default=(1, 8, 32, 128),
                   help="sequences decoding at once, comma-separated (default 1,8,32,128)")
    p.add_argument("--ttft-ms", type=milliseconds, default=None, help="latency target: time to first token (ms)")
    p.add_argument("--tpot-ms", type=milliseconds, default=None, help="latency target: time per output token (ms)")
    p.add_argument("--rate", type=number_in(0.001, 100_000, "rate"), default=None,
                   help="requests per second to serve: search replicas x GPU x tensor parallel x runtime meeting the "
                   "SLO for the least $/h (a simulation of each runtime's scheduler on the engine's step times)")
    p.add_argument("--slo-ttft-p95", type=milliseconds, default=milliseconds("500"), metavar="MS",
                   help="with --rate: 95th-percentile time to first token target, milliseconds (default 500)")
    p.add_argument("--slo-tpot-p95", type=milliseconds, default=milliseconds("50"), metavar="MS",
                   help="with --rate: 95th-percentile time per output token target, milliseconds (default 50)")
    p.add_argument("--input-tokens", type=bounded("prompt_tokens"), default=512,
                   help="with --rate: prompt tokens per request (default 512)")
    p.add_argument("--output-tokens", type=bounded("gen_tokens"), default=256,
                   help="with --rate: output tokens per request (default 256)")
    p.add_argument("--trace", default=None, metavar="FILE",
                   help="with --rate: request lengths, one 'input,output' line (or JSON {input, output}) each")
    p.add_argument("--lengths", choices=LENGTH_SPREADS, default="fixed",
                   help="with --rate: every request at --input-tokens/--output-tokens (fixed, the default), or "
                   "spread around them as ShareGPT's are in the serving benchmarks (sharegpt: exponential, cut at "
                   "1,024 prompt and 2,048 total tokens), or uniform from 1 to twice them as the benchmarks' random "
                   "dataset draws them (uniform)")
    p.add_argument("--runtimes", default=None, help="with --rate: serving runtimes to consider, comma-separated "
                   "(default: every one of data/serving.yaml: vllm, sglang, tensorrt-llm, llama.cpp)")
    p.add_argument("--requests", type=number_in(50, 20_000, "requests", integer=True), default=600,
                   help="with --rate: requests simulated per run (default 600)")
    p.add_argument("--seed", type=number_in(0, 2**31, "seed", integer=True), default=0,
                   help="with --rate: the arrivals' random seed (default 0)")

    p = sub.add_parser("launch", help="the plan as a SkyPilot task (sky launch) or a RunPod pod request")
    add_plan_args(p)
    p.add_argument("--format", choices=("skypilot", "runpod"), default="skypilot")
    p.add_argument("--run", default=RUN_PLACEHOLDER, help="the task's command (SkyPilot 'run')")
    p.add_argument("--workdir", default=None, help="the folder SkyPilot copies to the node and runs in (default: . "
                   "when --run names a script file here)")
    p.add_argument("--image", default=None, help="container image (SkyPilot and RunPod; default: a PyTorch image "
                   "whose CUDA build runs every candidate GPU)")
    p.add_argument("--autostop", type=number_in(0, MAX_AUTOSTOP_MIN, "minutes", integer=True),
                   default=DEFAULT_AUTOSTOP_MIN, metavar="MINUTES",
                   help=f"tear the cluster down after this many idle minutes (default {DEFAULT_AUTOSTOP_MIN}; "
                   "--bench keeps at least 1)")
    p.add_argument("--no-autostop", dest="autostop", action="store_const", const=None,
                   help="no autostop: the cluster bills until `sky down`")
    p.add_argument("--out", default=None, help="write to this file instead of printing (--bench: a folder)")
    p.add_argument("--optimize", action="store_true", help="let SkyPilot's optimizer pick the cheapest whole job "
                   "over every cloud and region it has enabled, with the planner's time per GPU; writes the task "
                   "with SkyPilot's offers in its order (needs SkyPilot in its own environment)")
    p.add_argument("--dryrun", action="store_true", help="with --optimize: print SkyPilot's pick beside the "
                   "planner's estimates and write nothing")
    p.add_argument("--clouds", default=None, metavar="NAMES", help="with --optimize: only these of SkyPilot's "
                   "enabled clouds, comma-separated (e.g. lambda,runpod)")
    p.add_argument("--skypilot-python", default=None, metavar="PATH", help="with --optimize: SkyPilot's Python "
                   "(default: $PLANNER_SKYPILOT_PYTHON, else the interpreter of `sky` on PATH)")
    p.add_argument("--bench", action="store_true", help="calibrate a fleet: a SkyPilot task running "
                   "`python -m planner.bench` on each candidate GPU type, and run_fleet.sh, which launches them all "
                   "at once, collects the results and tears every cluster down, Ctrl-C included")

    p = _formatted(sub, "prices", "show the GPU prices in use; --refresh fetches RunPod and writes a "
                   "snapshot", ("table", "json"))
    p.add_argument("--refresh", action="store_true",
                   help=f"fetch live prices and write a snapshot file (key from ${API_KEY_ENV}, optional)")
    p.add_argument("--live", action="store_true", help="show live prices (snapshot on failure) without writing")
    p.add_argument("--accept", action="store_true",
                   help="with --refresh: also write live prices held back as suspect (more than 3x from the snapshot)")
    p.add_argument("--skypilot-catalog", default=None, metavar="DIR", help="write a dated price file per cloud "
                   "(data/prices/clouds/<cloud>-DATE.yaml) from SkyPilot's catalog CSVs in DIR (<cloud>/vms.csv: "
                   "~/.sky/catalogs/v8 of a SkyPilot install, or catalogs/v8 of github.com/skypilot-org/"
                   "skypilot-catalog)")
    p.add_argument("--catalog-commit", default=None, metavar="SHA", help="with --skypilot-catalog: the catalog's "
                   "git commit, or cloud=SHA pairs separated by commas, recorded in each file")
    p.add_argument("--clouds-out", default=None, metavar="DIR", help="with --skypilot-catalog: where to write "
                   "(default: data/prices/clouds)")
    p.add_argument("--providers", default="runpod", help="show the prices of these providers (comma-separated, or "
                   "all): per GPU and tier the cheapest of them (default: runpod)")
    p.add_argument("--url", default=RUNPOD_GRAPHQL_URL, help="GraphQL endpoint (default: RunPod's)")
    p.add_argument("--out", default=str(PRICES_DIR), help="directory for --refresh (default: data/prices)")
    p.add_argument("--timeout", type=number_in(0.1, 120, "seconds"), default=10.0,
                   help="seconds per request (default 10)")

    p = _formatted(sub, "validate", "compare estimates with published measurements (validation/)")
    p.add_argument("--measurements", default=str(MEASUREMENTS_FILE),
                   help="measurements YAML (default: validation/)")
    p.add_argument("--plot", default=None, metavar="PATH.html", help="write the measured-vs-predicted chart")
    p.add_argument("--write-uncertainty", action="store_true",
                   help="write the uncertainty bands (data/uncertainty.yaml) from the leave-one-source-out residuals")
    p.add_argument("--rows", action="store_true",
                   help="print every row's measured and predicted value too (with --by-source: each row's "
                        "leave-one-source-out prediction, worst first per regime; csv: only those rows)")
    p.add_argument("--uncertainty-file", default=str(UNCERTAINTY_FILE), help=argparse.SUPPRESS)
    p.add_argument("--tune", action="store_true",
                   help="search runtime efficiencies on the tune split and print them (writes nothing)")
    p.add_argument("--write-tuned", action="store_true",
                   help="tune the runtimes on every source and write the values estimates use "
                   "(data/runtimes_tuned.yaml)")
    p.add_argument("--tuned-file", default=str(TUNED_FILE), help=argparse.SUPPRESS)
    p.add_argument("--by-source", action="store_true",
                   help="only leave one source out, every group (per source too) and every speed-up ratio pair")
    p.add_argument("--predict", default=None, metavar="ROWS.yaml",
                   help="predict a new source's rows (measurements.yaml's fields without `value`) and write "
                        "validation/predictions/<date>_<source>.yaml with the planner's commit, to commit BEFORE "
                        "the measured values are entered")
    p.add_argument("--slug", default=None, help="with --predict: the source's name in the file name")
    p.add_argument("--allow-dirty", action="store_true",
                   help="with --predict: run with uncommitted changes to planner/ (recorded in the file)")
    p.add_argument("--predictions-dir", default=str(PREDICTIONS_DIR), help=argparse.SUPPRESS)

    p = _formatted(sub, "profile", "trace a PyTorch model (MODULE:FACTORY) into a profile file")
    p.add_argument("factory", help="MODULE:FACTORY, e.g. examples/models/gpt2.py:build; factory(size, **args) returns "
                   "(model, inputs[, loss_fn]) for one sample")
    p.add_argument("--input", required=True, help="the input size's name and the sizes to trace, e.g. "
                   "tokens=128,256,512,1024 (3 to 12 sizes)")
    p.add_argument("--arg", action="append", help="KEY=VALUE passed to the factory (repeatable)")
    p.add_argument("--default-size", type=bounded("input_size"), default=None,
                   help="the profile's default input size (default: the largest traced)")
    p.add_argument("--out", default=None, help="profile file to write (default: <id>.yaml)")
    p.add_argument("--id", default=None, help="the profile's id (default: from the file and arguments)")
    p.add_argument("--name", default=None, help="the profile's display name")
    p.add_argument("--tolerance", type=number_in(0.01, 100, "percent"), default=1.0,
                   help="largest miss of a growth law, percent (default 1)")
    p.add_argument("--max-seconds", type=number_in(1, MAX_TRACE_SECONDS, "seconds"), default=600.0,
                   help="time cap for the whole trace (default 600)")
    p.add_argument("--max-host-gb", type=number_in(0.1, MAX_HOST_GB, "GB"), default=4.0,
                   help="host memory the tracing process may use beyond torch itself (default 4)")

    p = _formatted(sub, "calibration", "fit a bench result and compare analytic vs calibrated "
                   "estimates")
    p.add_argument("file", help="result file written by `python -m planner.bench`")
    add_plan_args(p)
    return parser
