"""Command line: `python -m planner estimate|gpus|models|prices|validate`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from planner.inputs.catalog import PRICE_TIERS, load_catalog
from planner.engine.estimate import Plan, estimate_all
from planner.inputs.models import load_model_file, load_models
from planner.views.report import csv_text, estimate_row, flat_row, text_table
from planner.base.schema import DataFileError, UnknownNameError
from planner.engine.workloads import OPTIMIZERS, SHARDINGS, Generate, Infer, Train


def _batch(text: str) -> int | None:
    if text == "auto":
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number or 'auto', got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("batch must be at least 1")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


def add_plan_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="cfdna-gen", help="preset id, or a path to a model YAML or an HF config.json")
    p.add_argument("--workload", choices=("generate", "infer", "train"), default="generate")
    p.add_argument("--precision", default="bf16", help="fp32 | tf32 | fp16 | bf16 | fp8 | int8 | int4")
    p.add_argument("--kv-dtype", default=None, help="KV-cache dtype (default: the activation dtype)")
    p.add_argument("--attention", default="sdpa", help="sdpa | flash-attn-2 | manual")
    p.add_argument("--runtime", default=None, help="pytorch-eager | torch-compile | llama.cpp | vllm | tensorrt-llm")
    p.add_argument("--compile", action="store_true", help="torch.compile with CUDA graphs (runtime torch-compile)")
    p.add_argument("--batch", type=_batch, default=None, help="a number, or auto (default): cheapest feasible per GPU")
    p.add_argument("--sequences", type=_positive_int, default=1_000_000, help="generate: sequences to generate")
    p.add_argument("--prompt-tokens", type=_positive_int, default=1, help="generate: prompt tokens (>= 1, BOS counts)")
    p.add_argument("--gen-tokens", type=_positive_int, default=165, help="generate: new tokens per sequence")
    p.add_argument("--samples", type=_positive_int, default=10_000, help="infer/train: samples (per epoch)")
    p.add_argument("--input-size", type=_positive_int, default=None, help="infer/train: tokens per sample, or L")
    p.add_argument("--epochs", type=float, default=1.0)
    p.add_argument("--optimizer", choices=sorted(OPTIMIZERS), default="adamw")
    p.add_argument("--checkpointing", action="store_true", help="train: activation checkpointing")
    p.add_argument("--grad-accum", type=_positive_int, default=1)
    p.add_argument("--sharding", choices=SHARDINGS, default="ddp",
                   help="train on several GPUs: ddp (full copies) or fsdp (ZeRO-3 sharded states)")
    p.add_argument("--gpus", type=_positive_int, default=1, help="GPUs per job (data or tensor parallel)")
    p.add_argument("--gpu", action="append", default=None, help="a GPU to include (repeatable; default: all)")
    p.add_argument("--price-tier", choices=PRICE_TIERS, default="secure")
    p.add_argument("--calibration", default=None, help="a benchmark result file from `python -m planner.bench`")


def resolve_model(name: str):
    path = Path(name)
    if path.suffix in (".yaml", ".yml", ".json") or path.exists():
        return load_model_file(path)
    return load_models().get(name)


def plan_from_args(a: argparse.Namespace) -> Plan:
    model = resolve_model(a.model)
    default_size = getattr(model, "context", None) or getattr(model, "default_input_size", 1)
    size = a.input_size or default_size
    if a.workload == "generate":
        workload = Generate(a.sequences, a.prompt_tokens, a.gen_tokens)
    elif a.workload == "infer":
        workload = Infer(a.samples, size)
    else:
        workload = Train(a.samples, size, a.epochs, a.optimizer, a.checkpointing, a.grad_accum, a.sharding)
    runtime = a.runtime or ("torch-compile" if a.compile else "pytorch-eager")
    return Plan(model, workload, a.precision, a.kv_dtype, a.attention, runtime, a.batch, a.gpus, a.price_tier)


def emit(rows: list[dict], fmt: str, flat: list[dict] | None = None) -> str:
    if fmt == "json":
        return json.dumps(rows, indent=2, default=str)
    return csv_text(flat or rows) if fmt == "csv" else text_table(flat or rows)


def cmd_estimate(a: argparse.Namespace) -> int:
    plan = plan_from_args(a)
    adjust = None
    if a.calibration:
        from planner.tools.calibration import load_calibration  # issue 4
        adjust = load_calibration(a.calibration).adjust
    results = estimate_all(plan, gpu_names=a.gpu, adjust=adjust)
    print(emit([estimate_row(e) for e in results], a.format, [flat_row(e) for e in results]))
    return 0


def cmd_gpus(a: argparse.Namespace) -> int:
    rows = []
    for g in load_catalog().gpus:
        rows.append({"id": g.id, "name": g.name, "vendor": g.vendor, "sm": g.sm, "vram_gb": g.vram_gb,
                     "mem_bw_gbps": g.mem_bw_gbps, "fp32": g.fp32_tflops, "tf32": g.tf32_tflops,
                     "fp16": g.fp16_tflops, "bf16": g.bf16_tflops, "fp8": g.fp8_tflops, "int8": g.int8_tops,
                     **{f"{t}_usd_hr": (g.price(t).usd_hr if g.price(t) else None) for t in PRICE_TIERS}})
    print(emit(rows, a.format))
    return 0


def cmd_models(a: argparse.Namespace) -> int:
    rows = [{"id": m.id, "name": m.name, "kind": m.kind, "params": m.params,
             "layers": getattr(m, "layers", None), "hidden": getattr(m, "hidden", None),
             "context": getattr(m, "context", None) or getattr(m, "default_input_size", None)}
            for m in load_models().models]
    print(emit(rows, a.format))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m planner", description="Rank GPUs by time, cost and feasibility.")
    sub = parser.add_subparsers(dest="command", required=True)
    est = sub.add_parser("estimate", help="estimate a job on every GPU (or --gpu ...)")
    add_plan_args(est)
    est.add_argument("--format", choices=("table", "json", "csv"), default="table")
    est.set_defaults(func=cmd_estimate)
    for name, func, text in (("gpus", cmd_gpus, "list the GPU catalog"), ("models", cmd_models, "list model presets")):
        p = sub.add_parser(name, help=text)
        p.add_argument("--format", choices=("table", "json", "csv"), default="table")
        p.set_defaults(func=func)
    for module in ("planner.tools.prices", "planner.tools.validation", "planner.tools.calibration"):  # subcommands owned by their modules
        try:
            __import__(module, fromlist=["add_cli"]).add_cli(sub)
        except (ImportError, AttributeError):
            pass
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (UnknownNameError, DataFileError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {exc.strerror or exc}: {getattr(exc, 'filename', '') or ''}", file=sys.stderr)
        return 2
