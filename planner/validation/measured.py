"""Validation against published measurements (validation/measurements.yaml).

Each row is rebuilt as a planner Plan, estimated with the engine, and compared with the measured figure:
error_pct = (predicted - measured) / measured x 100, on the row's own metric. Rows are split once and for all
by a hash of their id: a third (sha256(id) mod 3 == 0) may be used to tune runtime efficiencies, the rest
are only ever reported on ('test'). Rows the engine cannot represent are 'excluded', with the reason.

Mapping of rows to plans (documented in validation/README.md):
- decode: Generate(batch, max(1, prompt_tokens), gen_tokens) at a fixed batch; predicted = generated tokens / s
  over the batch, prefill included (as TensorRT-LLM's and gpt-fast's figures are). Several GPUs: tensor
  parallel (Plan.parallel 'tensor'), as the sources state; llama.cpp's layer split is excluded.
- prefill: Generate(batch, prompt_tokens, 1): the prefill pass alone, logits for the last token only (as
  llama-bench ppN and TensorRT-LLM first-token latency compute them); predicted = prompt tokens / s, or the
  pass's seconds for step_seconds rows.
- train: Train(global batch, seq_len, 1 epoch, adamw) over `gpus` GPUs, data parallel, with the stated
  micro-batch (plan batch) and gradient accumulation: exactly one optimizer step.
- quantized rows whose bits per weight differ from the preset's (Q4_K_M 4.8-4.9, q4f16 4.5, int4 g32 5.0
  against the int4 preset's 4.125) run with a derived precision that is the preset with the row's bytes per
  weight, passed to the engine through estimate_gpu's `rules`.
"""

from __future__ import annotations

import hashlib
import math
import statistics
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from pathlib import Path
from collections.abc import Callable

from planner import ROOT_DIR
from planner.base.files import file_version
from planner.base.schema import Record, UnknownNameError, load_document, load_yaml, sections_of, unique_ids
from planner.engine.estimate import Estimate, estimate_gpu
from planner.engine.host_speed import REFERENCE_HOST_SPEED, host_seconds
from planner.engine.plan import Plan, check_plan, check_runtime
from planner.inputs.catalog import GPU, MAX_NODE_GPUS, Catalog, load_catalog, load_link_kinds
from planner.inputs.facts import Facts, load_facts
from planner.inputs.jobs import BOUNDS, Generate, Train
from planner.inputs.layouts import MAX_DEGREE, Layout
from planner.inputs.models import MODEL_FILES, ModelCatalog, load_models
from planner.inputs.precisions import PrecisionRules, load_rules
from planner.inputs.rotary_sync import parse_version
from planner.inputs.runtimes import (GRAD_REDUCE_BYTES, HOST_US_BOUNDS, LAUNCH_GAP_US_BOUNDS, MEMORY_CLASSES,
                                     TP_GATHERS, TUNABLE_PARAMS, TUNED_BW_BOUNDS, Efficiency, Runtimes,
                                     eager_dispatch_us, load_runtimes, nccl_only, opted_in, with_build,
                                     with_engine_generation, with_prefill_chunk, with_training, with_ungraphed)
from planner.inputs.serving_runtimes import SchedulerProfile, load_schedulers
from planner.validation.uncertainty import REGIMES, meets_target, quantile, regime_for, regime_of

VALIDATION_DIR = ROOT_DIR / "validation"
MEASUREMENTS_FILE = VALIDATION_DIR / "measurements.yaml"
MODELS_EXTRA_FILE = VALIDATION_DIR / "models_extra.yaml"
CONDITIONS_AFTER_FILE = VALIDATION_DIR / "conditions_read_after.yaml"
# an entry of it whose fields replace what the row assumed (its conditions say NOT STATED), not only fill its gaps
REFINES_ASSUMED = "refines_assumed"
# Predictions committed before their rows were measured (planner.validation.predict_first writes them)
PREDICTIONS_DIR = VALIDATION_DIR / "predictions"

# Framework named in a row -> runtime profile in data/runtimes.yaml.
# A row's (framework, attention) read as the backend the framework actually runs: llama-bench rows with fa 1 were
# recorded as flash-attn-2, the only fused choice the catalog had; llama.cpp runs its own kernel (llama.cpp-fa,
# data/precisions.yaml), which the engine now refuses flash-attn-2 for (plan.attention_refusal). Committed
# predictions keep what they were predicted with; this reads the rows as the current engine plans them (post hoc).
# Megatron Core stacks attend through Transformer Engine's DotProductAttention (data/precisions.yaml te: cuDNN fused
# attention on Hopper), yet their rows stay read as the schema's default sdpa (FlashAttention-2 on Hopper): on the only
# Megatron-family rows with values (NeMo 24.07, Megatron Bridge) reading them as te moves the median speed bias from
# +14.8 % to +17.4 % while the cost they already miss (sustained clocks under a training load, validation/REPORT.md
# 'Training at scale by its mechanisms') is not modelled: the switch waits for it.
ROW_ATTENTION_READ_AS = {("llama.cpp", "flash-attn-2"): "llama.cpp-fa"}
FRAMEWORK_RUNTIME = {
    "llama.cpp": "llama.cpp", "pytorch-eager": "pytorch-eager", "hf-transformers": "pytorch-eager",
    "apex-amp-o2": "apex-amp-o2",
    "torch-compile": "torch-compile", "nanogpt": "torch-compile", "vllm": "vllm", "tensorrt-llm": "tensorrt-llm",
    "mlc-llm": "mlc-llm", "llm.c": "llm.c", "llm-foundry": "llm-foundry",
    # LMDeploy's TurboMind carries FasterTransformer's code on ('It's based on NVIDIA's FasterTransformer':
    # InternLM/lmdeploy docs/en/inference/turbomind.md @f44ba31c) and launches as it does (its launch family), but is
    # another engine (its own LLaMA kernels, a persistent batch): its own profile, not FasterTransformer's fractions
    "lmdeploy": "turbomind",
    # their own profiles (data/runtimes.yaml), not one family: both launch kernels one by one without CUDA graphs, but
    # FasterTransformer from C++ (9 kernels a GPT layer, vocabulary-split LM head) and DeepSpeed-Inference v0.7 from
    # Python through PyTorch (20 a BLOOM layer, LM head whole on every GPU)
    "deepspeed-inference": "deepspeed-inference", "fastertransformer": "fastertransformer",
    # TorchTitan (pytorch/torchtitan): PyTorch-native training with FSDP2; eager unless its config sets compile
    "torchtitan": "pytorch-eager",
    # AutoAWQ's fused modules (casper-hansen/AutoAWQ): its own attention, KV cache and AWQ linears, each a module
    # called from eager PyTorch, kernel by kernel without CUDA graphs: the autoawq profile (until 2026-11-27 the
    # generic pytorch-eager, with which the committed predictions were made)
    "autoawq": "autoawq",
    # KempnerForge (KempnerInstitute/KempnerForge): FSDP2 training; torch.compile on the model when its config sets
    # train.compile_model (benchmarks/mfu_scaling/mfu_bench.sh sets it per run), eager otherwise
    "kempnerforge": "pytorch-eager", "kempnerforge-compile": "torch-compile",
    # IBM's fms-fsdp (foundation-model-stack/fms-fsdp): FSDP with SDPA, use_torch_compile False by default (eager)
    "fms-fsdp": "pytorch-eager",
    # TinyLlama's pretraining code (jzhang38/TinyLlama, lit-gpt on Lightning Fabric): FSDP, eager PyTorch with
    # FlashAttention-2 and fused layernorm/SwiGLU/rotary/cross-entropy kernels, no torch.compile
    "tinyllama": "pytorch-eager",
    # NVIDIA Megatron Bridge (NVIDIA-NeMo/Megatron-Bridge): NeMo's trainer on Megatron Core + Transformer Engine
    "megatron-bridge": "megatron-lm",
    # NVIDIA NeMo 1 (megatron_gpt, NVIDIA/NeMo): trains through Megatron Core with Transformer Engine as well
    "nemo": "megatron-lm",
    # BigScience's Megatron-DeepSpeed fork: Megatron-LM's tensor-parallel layers and fused kernels, DeepSpeed's pipeline
    "megatron-deepspeed": "megatron-lm",
    # NVIDIA Megatron-LM itself (NVIDIA/Megatron-LM: pretrain_gpt.py on Megatron Core), the runtime profile's own stack
    "megatron-lm": "megatron-lm",
    # Megatron-LM as of 2021 (@50a4b5fa02, the SC21 runs), before Megatron Core and Transformer Engine: its own DDP
    # all-reducing after the backward, blocking tensor-parallel all-reduces (data/runtimes.yaml megatron-lm-2021)
    "megatron-lm-2021": "megatron-lm-2021",
    # InternLM's training framework of mid-2023 (InternLM/InternLM c18bec9, now InternEvo): Hybrid ZeRO-1 that
    # all-reduces gradients and broadcasts parameters per owning rank (data/runtimes.yaml internevo-2023)
    "internevo-2023": "internevo-2023",
    # Megatron-DeepSpeed of 2021 (MT-NLG): those Megatron-LM layers under DeepSpeed's pipeline engine and ZeRO-1
    "megatron-deepspeed-2021": "megatron-lm-2021",
}
# AutoAWQ's rows say precision int4 (the bits), and their id names the checkpoint's kernel version
# (validation/to_predict/autoawq-rtx4090.yaml: awq-<model>-<gemv|gemm>-...), which is the precision that runs them
AWQ_VERSIONS = {"gemv": "awq-gemv", "gemm": "awq-gemm"}
# An fp8 checkpoint run by Hugging Face transformers is its fine-grained FP8 (128 x 128 block scales, FP8Linear's two
# Triton kernels a call: data/precisions.yaml fp8-block-hf); the other runtimes' fp8 is their own per-tensor path.
LIBRARY_PRECISIONS = {("hf-transformers", "fp8"): "fp8-block-hf"}
ROW_REGIMES = ("decode", "prefill", "train")
ECHO_NEEDS_PREFILL = ("prompt_echo says the value ends at a streamer's echo of the prompt: it needs a prefill row; "
                      "leave it out otherwise")
PROMPT_ECHO_EXCLUDED = ("the value ends at the streamer's echo of the prompt, which Hugging Face generate() puts "
                        "before any forward pass (prompt_echo): generate()'s host set-up, not a prefill; not modelled")
LAUNCH_ONLY_EXCLUDED = ("the value ends before the GPU finished the forward pass (launch_only: a server's compute "
                        "interval stamped on the host after the kernels were queued, not synchronized): the host's "
                        "launch of the pass, not its time; not modelled")
METRICS = ("tokens_per_s", "samples_per_s", "step_seconds")
# a row's cluster and stack, where its source states what the catalog and runtime defaults do not
CLUSTER_FIELDS = ("node_gpus", "fabric_gbits_per_node", "gpu_p2p", "grad_reduce_dtype", "tp_gather", "fp8_params",
                  "host_speed", "transformers")
# a row's yes/no conditions about what its value measures, stated only when true (the Measurement fields of these
# names: None when absent); a later reading (conditions_read_after) can only turn them on
ON_FLAGS = ("streamed_ttft", "api_server", "prompt_echo", "launch_only")
ROW_FIELDS = ("id", "gpu", "gpus", "model", "regime", "framework", "precision", "weight_bits", "batch",
              "prompt_tokens", "gen_tokens", "seq_len", "metric", "value", "source", "conditions",
              "attention", "kv_dtype", "micro_batch", "grad_accum", "checkpointing", "custom_allreduce",
              "opt_in_allreduce", "tp", "pp", "cp", "vpp", "engine", "build", "cuda_graphs", *ON_FLAGS,
              *CLUSTER_FIELDS)
SPLITS = ("tune", "test", "excluded")
MAX_VERSION_CHARS = 16  # a release 'major.minor.patch' (Measurement.transformers)
HOST_LINK = "pcie-host"  # data/interconnects.yaml: PCIe without peer-to-peer, staged through host memory
# a train row's model-parallel degrees (planner/inputs/layouts.py Layout's fields, the names Megatron-LM's arguments
# give them); each is 1 unless the row states it
LAYOUT_FIELDS = ("tp", "pp", "cp", "vpp")
# The published rows with each source's own words (1.03 MB on 2026-11-27, 760 rows; 10.2 MB on 2026-11-28, 5,432
# rows): the repository's evidence, read under a cap of its own rather than an upload's (safe_parse.MAX_TEXT_BYTES);
# room for about twice as many rows again.
MEASUREMENTS_MAX_BYTES = 24_000_000
# Conditions read after the values (0.98 MB on 2026-11-28, past the generic 1 MB cap): the same evidence's cap.
CONDITIONS_AFTER_MAX_BYTES = 4_000_000
MAX_FABRIC_GBITS = 100_000  # a parser cap on a row's network per node (Gb/s): above any 8-NIC node of today
# llm-foundry trains with FSDP FULL_SHARD (its benchmarking yamls); TorchTitan with FSDP2's fully_shard, which reshards
# after forward (FULL_SHARD's schedule: torchtitan/parallelisms/parallelize_llama.py); KempnerForge with FSDP2's
# fully_shard (kempnerforge/distributed/parallel.py) over dp_shard GPUs; fms-fsdp's rows where its table says
# 'FSDP' (FULL_SHARD; its HSDP rows are not written: hybrid sharding is not a planner layout)
FSDP_FRAMEWORKS = ("llm-foundry", "torchtitan", "kempnerforge", "kempnerforge-compile", "fms-fsdp", "tinyllama")
# NeMo's megatron_gpt (optimizer distributed_fused_adam) and Megatron Bridge's recipes (Megatron Core's distributed
# optimizer) shard the optimizer states over the data-parallel ranks: ZeRO stage 1, as each row's conditions state;
# Megatron-DeepSpeed's BF16 optimizer (BLOOM tr11) implements its own ZeRO-1 over ZeRO stage 0; Megatron-LM's
# --use-distributed-optimizer is Megatron Core's DistributedOptimizer, 'Optimizer that shards state across
# data-parallel ranks' (https://docs.nvidia.com/megatron-core/developer-guide/0.19.0/apidocs/core/
# core.optimizer.distrib_optimizer.html, read 2026-11-27): gradients reduce-scattered, states sharded, ZeRO-1's layout;
# InternLM's HybridZeroOptimizer (internevo-2023) shards the optimizer states over its zero1 group
ZERO1_FRAMEWORKS = ("nemo", "megatron-bridge", "megatron-deepspeed", "megatron-lm", "megatron-deepspeed-2021",
                    "internevo-2023")
TUNE_MODULUS = 3  # rows with sha256(id) mod 3 == 0 form the tune split
SPLIT_RULE = (f"test = rows whose sha256(id) mod {TUNE_MODULUS} != 0, scored with the runtime priors "
              "(data/runtimes.yaml, never tuned on them; not data/runtimes_tuned.yaml, which every row informs)")
BITS_TOLERANCE = 0.05  # a row's bits/weight within this of the preset's use the preset itself


@dataclass(frozen=True)
class Measurement:
    """One published measurement (see validation/README.md for the fields)."""

    id: str
    gpu: str
    gpus: int
    model: str
    regime: str
    framework: str
    precision: str
    weight_bits: float
    batch: int
    prompt_tokens: int
    gen_tokens: int
    seq_len: int | None
    metric: str
    value: float
    source: str
    conditions: str
    attention: str = "sdpa"
    kv_dtype: str | None = None
    micro_batch: int | None = None
    grad_accum: int = 1
    checkpointing: bool = False
    # the runtime ran its own all-reduce kernel where it has one (data/custom_allreduce.yaml); False: a version or
    # setting that sent every collective through NCCL
    custom_allreduce: bool = True
    # False: the run launched every kernel of its steps from the runtime's host loop, no CUDA graph, as its source
    # states the release and harness (TensorRT-LLM's gptSessionBenchmark without --enable_cuda_graph): the runtime's
    # `ungraphed` launch costs (inputs.runtimes.with_ungraphed); None: the runtime profile's own (graphed) launches
    cuda_graphs: bool | None = None
    # the run switched on the runtime's opt-in all-reduce (data/custom_allreduce.yaml `opt_in`, e.g. gpt-fast's
    # ENABLE_INTRA_NODE_COMM=1 for PyTorch's intra-node all-reduce)
    opt_in_allreduce: bool = False
    # a training row's tensor-parallel degree, pipeline stages, context-parallel degree and virtual pipeline stages
    # per rank (interleaved 1F1B; 1: plain 1F1B); the data-parallel/FSDP ranks are gpus / (tp x pp x cp)
    tp: int = 1
    pp: int = 1
    cp: int = 1
    vpp: int = 1
    # GPUs per server as the source states them, where fewer than the catalog's node (KempnerForge's 4-GPU H200
    # nodes): collectives of more GPUs cross the fabric between nodes (None: the catalog's node)
    node_gpus: int | None = None
    # the network between nodes, Gb/s per node, where the source states it (fms-fsdp: '128 GPUs with 400Gbps');
    # None: the catalog's fabric (data/interconnects.yaml)
    fabric_gbits_per_node: float | None = None
    # False where the source shows its host had no GPU peer-to-peer (vLLM's log: 'Custom allreduce is disabled
    # because your platform lacks GPU P2P capability'): no NVLink, PCIe through host memory (GPU.without_p2p), no
    # runtime all-reduce (it needs NVLink); None: the catalog's links
    gpu_p2p: bool | None = None
    # the dtype the run's FSDP reduce-scatters gradients in where its code sets one (GRAD_REDUCE_BYTES; None: the
    # runtime's own, data/runtimes.yaml training.grad_reduce_dtype, else the compute dtype)
    grad_reduce_dtype: str | None = None
    # how the run's tensor parallel gathers a layer's inputs where its code sets its own plan (TP_GATHERS; None: the
    # runtime's)
    tp_gather: str | None = None
    # an FP8 run that holds the layers' weights in FP8 (NeMo's fp8_params, Megatron-LM's --fp8-param-gather; NeMo 2's
    # bf16_with_fp8_mixed sets it): runtimes.Training.fp8_weights for this row (None: not stated, the runtime's)
    fp8_params: bool | None = None
    # the host CPU's single-thread speed over the reference hosts' (planner.engine.host_speed) where the source names
    # the server and so its CPU (a DGX A100's AMD EPYC 7742): every host-side time of the row divided by it; None:
    # not stated, the reference host (1)
    host_speed: float | None = None
    # the Hugging Face transformers release the row ran ('4.38.2'), where its source states it or bounds it: Plan.
    # transformers (some releases' FlashAttention-2 classes sync once a layer); None: not stated, a current release
    transformers: str | None = None
    # the serving engine's generation as the row's source names its version (vLLM: 'v0-sync' before 0.6.0, 'v0'
    # for 0.6-0.10 with VLLM_USE_V1=0, 'v1'): its CPU work per sequence per step, data/serving.yaml `engines`
    # (None: the current generation, as estimates take it)
    engine: str | None = None
    # the runtime's build number where the source prints it (llama.cpp's 'build: 989 (bf83bff)'): the runtime then
    # runs as that build did (RuntimeProfile.at_build: llama.cpp's prompt GEMM path); None: the current build
    build: int | None = None
    # a prefill row whose value is the time to the first token of a request that goes on generating, streamed (not
    # a max_tokens 1 request): the engine generation's first_token_steps of host work after the prefill count in
    # it (first_token_lag_s); None: not stated, the prefill's own time
    streamed_ttft: bool | None = None
    # a streamed_ttft row whose request went through the serving engine's OpenAI-compatible HTTP server (vllm
    # serve, SGLang's server), not an in-process engine: the front end's work on it (data/serving.yaml
    # request_overhead_ms and tokenize_us_per_token: Scheduler.front_end_s) counts in its time to first token
    api_server: bool | None = None
    # a prefill row whose value is the interval to the streamer's first item where that item was the prompt echo:
    # Hugging Face generate() puts the prompt's input_ids to its streamer before any forward pass, and a streamer that
    # skips it only once (no reset in end()) passes it on in every later run. The value then times generate()'s host
    # set-up, no prefill: the engine has no such quantity, so the row is not scored (exclusion); None: a prefill
    prompt_echo: bool | None = None
    # a prefill row whose value is a server's compute interval that ends on the host before the GPU finishes the pass
    # (Triton's libtorch backend of 2021 stamps its compute end after queueing the first output's copy, with no
    # stream synchronization: the GPU's work lands in the next interval): the engine has no such quantity, so the
    # row is not scored (exclusion); None: the interval holds the pass
    launch_only: bool | None = None


@dataclass(frozen=True)
class RowResult:
    row_id: str
    gpu_id: str
    gpu_class: str
    model_id: str
    regime: str  # one of uncertainty.REGIMES (regime_of the estimate)
    framework: str
    runtime: str
    precision: str
    batch: int
    metric: str
    measured: float
    predicted: float | None
    error_pct: float | None  # signed: (predicted - measured) / measured x 100
    split: str  # 'tune' | 'test' | 'excluded'
    note: str
    source: str
    model_kind: str = "decoder"  # the profile's kind (ModelProfile.kind): bands are per kind of evidence

    @property
    def ape(self) -> float | None:
        return None if self.error_pct is None else abs(self.error_pct)

    @cached_property  # read millions of times when the bands are built
    def seconds_ratio(self) -> float | None:
        """Measured seconds / predicted seconds (> 1: the job took longer than estimated)."""
        if not self.predicted or not self.measured:
            return None
        r = self.predicted / self.measured
        return 1.0 / r if self.metric == "step_seconds" else r

    @property
    def speed_bias_pct(self) -> float | None:
        """The error on speed whatever the row's metric, in %: + = the planner is faster than measured (a step_seconds
        row predicted too short counts as +); None without a prediction."""
        ratio = self.seconds_ratio
        return None if ratio is None else 100.0 * (ratio - 1.0)


@dataclass(frozen=True)
class ValidationReport:
    rows: tuple[RowResult, ...]
    measurements: str = str(MEASUREMENTS_FILE)

    def scored(self, split: str = "test") -> list[RowResult]:
        """Rows with a prediction in `split` ('tune', 'test' or 'all' = both)."""
        keep = ("tune", "test") if split == "all" else (split,)
        return [r for r in self.rows if r.split in keep and r.error_pct is not None]

    def summary(self, split: str = "test") -> list[dict]:
        """n, median and 90th-percentile absolute % error: all rows, per regime, per GPU class, per cell."""
        rows = self.scored(split)
        groups: list[tuple[str, str, list[RowResult]]] = [("all", "all", rows)]
        groups += [("regime", g, [r for r in rows if r.regime == g]) for g in REGIMES]
        groups += [("gpu_class", c, [r for r in rows if r.gpu_class == c]) for c in MEMORY_CLASSES]
        groups += [("regime x gpu_class", f"{g}/{c}", [r for r in rows if r.regime == g and r.gpu_class == c])
                   for g in REGIMES for c in MEMORY_CLASSES]
        out = []
        for kind, key, rs in groups:
            apes = [r.ape for r in rs]
            med = round(statistics.median(apes), 1) if apes else None
            bias = round(statistics.median(r.speed_bias_pct for r in rs), 1) if rs else None
            target, meets = meets_target(key, med, bias) if kind == "regime" else (None, None)
            out.append({"split": split, "group": kind, "key": key, "n": len(rs), "median_ape": med,
                        "p90_ape": round(quantile(apes, 0.9), 1) if apes else None, "median_speed_bias_pct": bias,
                        "target_median_ape": target, "meets_target": meets})
        return out


# ---------------------------------------------------------------- loading

def split_of(row_id: str) -> str:
    """'tune' for the third of ids whose sha256 is divisible by 3, else 'test' (fixed, independent of results)."""
    return "tune" if int(hashlib.sha256(row_id.encode()).hexdigest(), 16) % TUNE_MODULUS == 0 else "test"


@lru_cache(maxsize=2)
def validation_models(extra: str | Path = MODELS_EXTRA_FILE) -> ModelCatalog:
    """The planner's model presets plus validation/models_extra.yaml."""
    return load_models(tuple(MODEL_FILES) + (Path(extra),))


def _parse_row(rec: Record, catalog: Catalog, models: ModelCatalog, rules: PrecisionRules,
               measured: bool = True) -> Measurement:
    """One row; `measured` False: a row entered before its value is known (validation/predict_first.py), which must
    not carry one (its Measurement's value is NaN)."""
    rec.check_keys(ROW_FIELDS)
    if not measured and rec.data.get("value") is not None:
        raise rec.fail("value", "a row to predict before it is measured must not carry a measured value: remove "
                                "`value` (enter it in measurements.yaml after the predictions are committed)")
    regime = rec.text("regime", choices=ROW_REGIMES)
    for field, lookup in (("gpu", catalog.get), ("model", models.get)):
        try:
            lookup(rec.text(field))
        except UnknownNameError as exc:
            raise rec.fail(field, str(exc)) from None
    for field, lookup, default in (("precision", rules.precision, None), ("kv_dtype", rules.kv_dtype, None),
                                   ("attention", rules.attention, "sdpa")):
        value = rec.text(field, required=field == "precision") or default
        if value is not None:
            try:
                lookup(value)
            except UnknownNameError as exc:
                raise rec.fail(field, str(exc)) from None
    m = Measurement(
        id=rec.text("id"), gpu=rec.text("gpu"), gpus=rec.number("gpus", lo=1, hi=4096, integer=True),
        model=rec.text("model"), regime=regime, framework=rec.text("framework", choices=tuple(FRAMEWORK_RUNTIME)),
        precision=rec.text("precision"), weight_bits=rec.number("weight_bits", lo=1, hi=32),
        batch=rec.number("batch", lo=1, hi=10**6, integer=True),
        prompt_tokens=rec.number("prompt_tokens", lo=0, hi=10**7, integer=True),
        gen_tokens=rec.number("gen_tokens", lo=0, hi=10**7, integer=True),
        seq_len=rec.number("seq_len", required=regime == "train", lo=1, hi=10**7, integer=True),
        metric=rec.text("metric", choices=METRICS),
        value=rec.number("value", lo=1e-9, hi=1e12) if measured else math.nan,
        source=rec.text("source"), conditions=rec.text("conditions"),
        attention=rec.text("attention", required=False) or "sdpa", kv_dtype=rec.text("kv_dtype", required=False),
        micro_batch=rec.number("micro_batch", required=False, lo=1, hi=10**6, integer=True),
        grad_accum=rec.number("grad_accum", required=False, lo=1, hi=10**4, integer=True) or 1,
        checkpointing=rec.flag("checkpointing", default=False),
        custom_allreduce=rec.flag("custom_allreduce", default=True),
        cuda_graphs=rec.flag("cuda_graphs") if rec.raw("cuda_graphs", required=False) is not None else None,
        opt_in_allreduce=rec.flag("opt_in_allreduce", default=False),
        tp=rec.number("tp", required=False, lo=1, hi=MAX_DEGREE, integer=True) or 1,
        pp=rec.number("pp", required=False, lo=1, hi=MAX_DEGREE, integer=True) or 1,
        cp=rec.number("cp", required=False, lo=1, hi=MAX_DEGREE, integer=True) or 1,
        vpp=rec.number("vpp", required=False, lo=1, hi=MAX_DEGREE, integer=True) or 1,
        engine=rec.text("engine", required=False) or None,
        build=rec.number("build", required=False, lo=0, hi=10**6, integer=True), **_cluster_conditions(rec),
        **{flag: rec.flag(flag, default=False) or None for flag in ON_FLAGS},
    )
    if m.prompt_echo and regime != "prefill":
        raise rec.fail("prompt_echo", ECHO_NEEDS_PREFILL)
    if m.engine is not None:
        _check_engine(rec, m.framework, m.engine)
    if m.cuda_graphs is False:
        _check_ungraphed(rec, m.framework)
    if m.api_server:
        _check_api_server(rec, m.framework, m.regime, m.streamed_ttft)
    if regime == "decode" and m.gen_tokens < 1:
        raise rec.fail("gen_tokens", "a decode row needs gen_tokens >= 1")
    if regime == "prefill" and m.prompt_tokens < 1:
        raise rec.fail("prompt_tokens", "a prefill row needs prompt_tokens >= 1")
    if m.fp8_params and (regime != "train" or m.precision != "fp8"):
        raise rec.fail("fp8_params", "FP8 primary weights are a condition of an FP8 training row (regime train, "
                                     f"precision fp8; this row: {regime}, {m.precision}): leave fp8_params out")
    if regime == "train":
        _check_train_layout(rec, m)
    elif m.micro_batch is not None:
        raise rec.fail("micro_batch", "only train rows have a micro-batch")
    else:
        for field in LAYOUT_FIELDS:
            if getattr(m, field) > 1:
                raise rec.fail(field, "tp, pp, cp and vpp describe a training row's layout; an inference row over "
                                      "several GPUs runs tensor parallel over all of them")
    return m


def _check_train_layout(rec: Record, m: Measurement) -> None:
    """A train row's layout and batches multiply out: tp x pp x cp divides the GPUs, virtual stages need a pipeline,
    micro_batch x grad_accum x data-parallel ranks = batch (each failure names its field)."""
    per_copy = m.tp * m.pp * m.cp
    if m.gpus % per_copy:
        field = "cp" if m.cp > 1 else "tp"
        raise rec.fail(field, f"tp {m.tp} x pp {m.pp} x cp {m.cp} = {per_copy} GPUs per model copy does not divide "
                              f"the row's {m.gpus} GPUs")
    if m.vpp > 1 and m.pp < 2:
        raise rec.fail("vpp", f"vpp {m.vpp} virtual stages per rank interleave a pipeline: they need pp 2 or more "
                              f"(the row has pp {m.pp}); leave vpp out for a plain 1F1B or no pipeline")
    dp = m.gpus // per_copy
    micro = m.micro_batch or math.ceil(m.batch / dp)
    if micro * m.grad_accum * dp != m.batch:
        raise rec.fail("micro_batch", f"micro_batch {micro} x grad_accum {m.grad_accum} x data-parallel ranks "
                                      f"{dp} (gpus / (tp x pp x cp)) != batch {m.batch} (sequences per optimizer step)")


def engine_host_us(framework: str, engine: str, gpus: int = 1) -> tuple[float, float | None]:
    """(serial CPU microseconds per sequence per step, per step or None for the runtime profile's) of `framework`'s
    serving engine in generation `engine` (data/serving.yaml `engines`) spanning `gpus` GPUs (its per-step calls to
    each GPU's worker where it has them: SchedulerProfile.step_host_us); ValueError naming the field when its engine
    has no such generation."""
    runtime = FRAMEWORK_RUNTIME[framework]
    try:
        profile = load_schedulers().get(runtime)
    except UnknownNameError:
        raise ValueError(f"engine: {framework} is not a serving engine of data/serving.yaml; only rows of one "
                         "(vllm) may name an engine generation") from None
    return profile.host_us_per_seq(engine), profile.step_host_us(engine, gpus)


def first_token_lag_s(row: Measurement) -> float:
    """Seconds a streamed request's first token waits beyond its prefill step (a prefill row with streamed_ttft):
    through an OpenAI-compatible server (api_server), the front end's work on the request, Scheduler.front_end_s of
    its prompt (data/serving.yaml request_overhead_ms + prompt_tokens x tokenize_us_per_token: the one formula the
    serving simulation charges too); with an engine generation, its first_token_steps (vLLM V0 0.6-0.10 processes a
    step's outputs in the next step's callback) x one step's host time at the row's batch, step_host_us + batch x
    host_us_per_seq; 0 for any other row. All of it host CPU work, on the row's host (host_seconds of its
    host_speed), as the plan's own host times are."""
    if not (row.streamed_ttft and row.regime == "prefill"):
        return 0.0
    lag = 0.0
    if row.api_server:
        lag += serving_profile(row.framework).front_end_s(row.prompt_tokens)
    if row.engine:
        steps = load_schedulers().get(FRAMEWORK_RUNTIME[row.framework]).first_token_steps(row.engine)
        per_seq, step = engine_host_us(row.framework, row.engine, row.gpus)
        lag += steps * ((step or 0.0) + row.batch * per_seq) * 1e-6
    return host_seconds(lag, row.host_speed or REFERENCE_HOST_SPEED)


def serving_profile(framework: str) -> SchedulerProfile:
    """`framework`'s serving engine (data/serving.yaml); ValueError naming the field when it has none."""
    try:
        return load_schedulers().get(FRAMEWORK_RUNTIME.get(framework, framework))
    except UnknownNameError:
        raise ValueError(f"api_server: {framework} is not a serving engine of data/serving.yaml (vllm, sglang, "
                         "tensorrt-llm, llama.cpp); only their rows may name an HTTP server's front end") from None


def eager_prefill_us(framework: str, engine: str, runtimes: Runtimes) -> float:
    """CPU microseconds to dispatch a prefill kernel in `framework`'s engine generation `engine`: eager PyTorch's
    (eager_dispatch_us) where the generation runs its prefills eagerly (data/serving.yaml `engines` eager_prefill:
    vLLM V0), else 0."""
    eager = load_schedulers().get(FRAMEWORK_RUNTIME[framework]).eager_prefill(engine)
    return eager_dispatch_us(runtimes) if eager else 0.0


def ungraphed_prefill(framework: str, engine: str) -> tuple[int, float]:
    """(the most tokens a step of `framework`'s engine generation `engine` replays a CUDA graph for, CPU microseconds
    per kernel of a prefill step with more: data/serving.yaml graph_max_tokens and compiled_dispatch_us, vLLM V1),
    or (0, 0.0) where the generation has no such limit."""
    return load_schedulers().get(FRAMEWORK_RUNTIME[framework]).ungraphed_prefill(engine)


def engine_prefill_chunk(row: Measurement, gpu: GPU) -> int:
    """Prompt tokens per prefill step of each of the row's sequences in its serving engine's current generation (one
    that runs the runtime profile's step time: vLLM V1): the scheduler's token budget on the row's GPU (data/
    serving.yaml tiers: 2,048, or 8,192 on a GPU of 70 GiB or more other than an A100) shared by the row's batch,
    where it chunks prompts; 0 (the whole prompt) where it does not."""
    sched = load_schedulers().get(FRAMEWORK_RUNTIME[row.framework]).on(gpu.id, gpu.vram_gib)
    return max(1, sched.token_budget // row.batch) if sched.chunked_prefill else 0


def eager_decode_from(framework: str, engine: str) -> int:
    """The KV position from which `framework`'s engine generation `engine` runs its decode steps eagerly (data/
    serving.yaml graph_max_context: vLLM V0's CUDA graphs cover 8,192 tokens of context); 0: none."""
    return load_schedulers().get(FRAMEWORK_RUNTIME[framework]).eager_decode_from(engine)


def _check_api_server(rec: Record, framework: str, regime: str, streamed: bool | None) -> None:
    if not (streamed and regime == "prefill"):
        raise rec.fail("api_server", "api_server says a streamed first token went through an HTTP server's front "
                                     "end: it needs a prefill row with streamed_ttft true; leave it out otherwise")
    try:
        serving_profile(framework)
    except ValueError as exc:
        raise rec.fail("api_server", str(exc)) from None


def _check_ungraphed(rec: Record, framework: str) -> None:
    """cuda_graphs false needs a runtime whose profile states what launching without graphs costs."""
    try:
        with_ungraphed(load_runtimes(), FRAMEWORK_RUNTIME[framework])
    except ValueError as exc:
        raise rec.fail("cuda_graphs", str(exc)) from None


def _check_engine(rec: Record, framework: str, engine: str) -> None:
    try:
        engine_host_us(framework, engine)
    except ValueError as exc:
        raise rec.fail("engine", str(exc)) from None


def _cluster_conditions(rec: Record) -> dict:
    """A row's optional cluster and stack conditions (CLUSTER_FIELDS), checked: Measurement's keyword arguments."""
    return dict(node_gpus=rec.number("node_gpus", required=False, lo=1, hi=MAX_NODE_GPUS, integer=True),
                fabric_gbits_per_node=rec.number("fabric_gbits_per_node", required=False, lo=1, hi=MAX_FABRIC_GBITS),
                gpu_p2p=None if rec.flag("gpu_p2p", default=True) else False,
                grad_reduce_dtype=rec.text("grad_reduce_dtype", required=False, choices=tuple(GRAD_REDUCE_BYTES)),
                tp_gather=rec.text("tp_gather", required=False, choices=TP_GATHERS),
                fp8_params=rec.flag("fp8_params", default=False) or None,
                host_speed=rec.number("host_speed", required=False, lo=BOUNDS["host_speed"].lo,
                                      hi=BOUNDS["host_speed"].hi),
                transformers=_transformers(rec))


def _transformers(rec: Record) -> str | None:
    """The optional `transformers` release ('4.38.2'), checked."""
    text = rec.text("transformers", required=False, max_len=MAX_VERSION_CHARS)
    if text is not None:
        try:
            parse_version(text)
        except ValueError as exc:
            raise rec.fail("transformers", str(exc)) from None
    return text


@lru_cache(maxsize=4)
def conditions_read_after(path: str | Path = CONDITIONS_AFTER_FILE) -> dict[str, dict]:
    """By row id, the cluster and stack conditions read from a source after its rows' predictions were committed
    (validation/conditions_read_after.yaml): a committed row may not change, so they stay apart and only the current
    engine's predictions of those rows use them (post hoc). Each entry names its source."""
    out: dict[str, dict] = {}
    for i, raw in enumerate(load_yaml(path, "rows", max_bytes=CONDITIONS_AFTER_MAX_BYTES)):
        rec = Record.of(path, i, raw)
        rec.check_keys(("id", *CLUSTER_FIELDS, "engine", "build", *ON_FLAGS, "custom_allreduce", "cuda_graphs",
                        "framework", "attention", "precision", "weight_bits", "refines_assumed", "source"))
        rec.text("source")
        cond = {k: v for k, v in _cluster_conditions(rec).items() if v is not None}
        if rec.number("build", required=False) is not None:
            cond["build"] = rec.number("build", lo=0, hi=10**6, integer=True)
        if rec.text("engine", required=False):
            cond["engine"] = rec.text("engine")  # checked against the row's engine where the row is predicted
        # prompt_echo is checked against the row's regime where the row is predicted
        cond.update({flag: True for flag in ON_FLAGS if rec.flag(flag, default=False)})
        if rec.raw("custom_allreduce", required=False) is not None:  # False: the version predates the runtime's own
            cond["custom_allreduce"] = rec.flag("custom_allreduce")
        if rec.raw("cuda_graphs", required=False) is not None:  # False: the release's harness graphed no step
            cond["cuda_graphs"] = rec.flag("cuda_graphs")
        if rec.text("framework", required=False):  # the stack's era, where the row mapped it to today's key
            cond["framework"] = rec.text("framework", choices=tuple(FRAMEWORK_RUNTIME))
        if rec.text("attention", required=False):  # the attention path that stack ran
            cond["attention"] = rec.text("attention", choices=tuple(b.id for b in load_rules().attention_backends))
        if rec.text("precision", required=False):  # a precision preset added since (bf16-amp: autocast over fp32)
            cond["precision"] = rec.text("precision", choices=tuple(p.id for p in load_rules().precisions))
        if rec.number("weight_bits", required=False) is not None:  # the bits the weights are held in
            cond["weight_bits"] = rec.number("weight_bits", lo=1, hi=32)
        if rec.flag("refines_assumed", default=False):
            cond[REFINES_ASSUMED] = True
        out[rec.text("id")] = cond
    unique_ids(path, out)
    return out


def as_known_now(row: Measurement) -> Measurement:
    """The row with the conditions read from its source after its prediction was committed (conditions_read_after):
    what the current engine predicts it with (a field the row states itself is kept, unless the entry says
    refines_assumed: the row's conditions call that field NOT STATED, assumed, and the source read since narrows
    the assumption)."""
    cond = dict(conditions_read_after().get(row.id, {}))
    refines = cond.pop(REFINES_ASSUMED, False)
    extra = {k: v for k, v in cond.items() if refines or getattr(row, k) is None}
    return replace(row, **extra) if extra else row


def load_measurements(path: str | Path = MEASUREMENTS_FILE, extra_models: str | Path = MODELS_EXTRA_FILE,
                      measured: bool = True) -> tuple[Measurement, ...]:
    """Load and check every row; a malformed row raises DataFileError naming file, row and field. `measured` False:
    rows to predict before they are measured, which must carry no `value`. Parsed once per version of the file (its
    size and modification time): the rows are frozen, and a 4 MB file takes a second to parse."""
    return _load_measurements(*file_version(path), str(extra_models), measured)


@lru_cache(maxsize=16)
def _load_measurements(path: str, mtime_ns: int, size: int, extra_models: str,
                       measured: bool) -> tuple[Measurement, ...]:
    catalog, models, rules = load_catalog(), validation_models(extra_models), load_rules()
    rows = tuple(_parse_row(Record.of(path, i, raw), catalog, models, rules, measured)
                 for i, raw in enumerate(load_yaml(path, "rows", max_bytes=MEASUREMENTS_MAX_BYTES)))
    unique_ids(path, (r.id for r in rows))
    return rows


def prediction_first_ids(directory: str | Path = PREDICTIONS_DIR) -> frozenset[str]:
    """The ids of every row predicted before it was measured (a predictions file under `directory`). Their sources
    are scored by those committed predictions and held out of tuning (leave one source out, data/runtimes_tuned.yaml),
    so that the values which made the predictions stay the ones the rows are scored against."""
    return _prediction_first_ids(tuple(file_version(p) for p in sorted(Path(directory).glob("*.yaml"))))


@lru_cache(maxsize=8)
def _prediction_first_ids(files: tuple[tuple[str, int, int], ...]) -> frozenset[str]:
    """The ids in the predictions files (path, modification time, size): parsed once per version of the files."""
    ids: set[str] = set()
    for path, _, _ in files:
        for i, raw in enumerate(sections_of(predictions_document(path), path, ("rows",))["rows"]):
            ids.add(Record.of(path, i, raw).text("id"))
    return frozenset(ids)


def predictions_document(path: str | Path) -> dict:
    """A predictions file's YAML document (schema.load_document, undated), parsed once per version of the file and
    shared: the held-out ids here and predict_first's scoring read the same ~120 files, whose parsing is a fifth of
    `planner validate`. Callers only read it."""
    return _predictions_document(*file_version(path))


# one entry per predictions file (124 today, a few new each round)
@lru_cache(maxsize=512)
def _predictions_document(name: str, _mtime_ns: int, _size: int) -> dict:
    return load_document(name)


# ---------------------------------------------------------------- rows -> plans -> results

# A measured run fitted in its GPU: scoring its speed must not refuse it for the planning margin (tuned servers such
# as TensorRT-LLM and vLLM fill 90-95 % of memory with KV cache), so rows are planned against all the reported memory.
MEASURED_RUN_MEMORY_TARGET = 1.0


def awq_precision(row: Measurement) -> str | None:
    """The AWQ precision of an AutoAWQ int4 row (its id's kernel version), or None for any other row."""
    if row.framework != "autoawq" or row.precision != "int4":
        return None
    return next((p for v, p in AWQ_VERSIONS.items() if f"-{v}-" in row.id), None)


def precision_for(row: Measurement, rules: PrecisionRules) -> tuple[str, PrecisionRules, str]:
    """(precision id, rules holding it, note): the preset, or the preset at the row's bits per weight; an AutoAWQ
    row's int4 is the AWQ checkpoint of the kernel version its id names (AWQ_VERSIONS), a library's own format
    where the framework runs one (LIBRARY_PRECISIONS)."""
    preset = rules.precision(awq_precision(row) or LIBRARY_PRECISIONS.get((row.framework, row.precision))
                             or row.precision)
    if abs(preset.weight_bytes * 8 - row.weight_bits) <= BITS_TOLERANCE:
        return preset.id, rules, ""
    # a row's bits per weight are its file size over all parameters (GGUF quantizes embeddings and head too)
    derived = replace(preset, id=f"{preset.id}@{row.weight_bits:g}b", weight_bytes=row.weight_bits / 8,
                      quantized_weights="all",
                      note=f"{preset.id} at {row.weight_bits:g} bits per weight (validation row)")
    note = f"{preset.id} preset run at the row's {row.weight_bits:g} bits/weight (preset: {preset.weight_bytes * 8:g})"
    return derived.id, replace(rules, precisions=rules.precisions + (derived,)), note


def row_layout(row: Measurement) -> Layout:
    """The training layout a row states (tp, pp, cp and its virtual pipeline stages per rank)."""
    return Layout(tp=row.tp, pp=row.pp, cp=row.cp, vpp=row.vpp)


def plan_for(row: Measurement, models: ModelCatalog, rules: PrecisionRules) -> tuple[Plan, PrecisionRules, str]:
    """The Plan that reproduces a row (see the module docstring), the rules it needs and a mapping note."""
    model = models.get(row.model)
    precision, rules, note = precision_for(row, rules)
    if row.regime == "train":
        dp = row.gpus // (row.tp * row.pp * row.cp)
        sharding = ("ddp" if dp == 1 else "fsdp" if row.framework in FSDP_FRAMEWORKS
                    else "zero1" if row.framework in ZERO1_FRAMEWORKS else "ddp")
        workload = Train(row.batch, row.seq_len, 1.0, "adamw", row.checkpointing, row.grad_accum, sharding,
                         layout=row_layout(row))
        batch = row.micro_batch or math.ceil(row.batch / dp)
    elif row.regime == "prefill":
        workload, batch = Generate(row.batch, row.prompt_tokens, 1), row.batch
    else:
        workload, batch = Generate(row.batch, max(1, row.prompt_tokens), row.gen_tokens), row.batch
    # inference over several GPUs runs tensor parallel, as the sources state (llama.cpp's layer split is excluded)
    parallel = "tensor" if row.regime != "train" and row.gpus > 1 and row.framework != "llama.cpp" else "auto"
    attention = ROW_ATTENTION_READ_AS.get((row.framework, row.attention), row.attention)
    plan = Plan(model, workload, precision, row.kv_dtype, attention, FRAMEWORK_RUNTIME[row.framework],
                batch, row.gpus, memory_target=MEASURED_RUN_MEMORY_TARGET, parallel=parallel,
                host_speed=row.host_speed or REFERENCE_HOST_SPEED, transformers=row.transformers)
    return plan, rules, note


def predicted_value(row: Measurement, e: Estimate) -> float | None:
    """The estimate in the row's metric."""
    if not e.feasible or not e.seconds:
        return None
    if row.metric == "step_seconds":
        return e.seconds + first_token_lag_s(row)
    if row.metric == "samples_per_s":
        return e.items_per_s
    if row.regime == "prefill":
        return row.batch * row.prompt_tokens / (e.seconds + first_token_lag_s(row))
    return e.tokens_per_s


def exclusion(row: Measurement, e: Estimate) -> str | None:
    """Why a row cannot be scored against the engine as it stands (None: it can)."""
    if row.prompt_echo:
        if row.regime != "prefill":
            raise ValueError(f"validation row {row.id}: {ECHO_NEEDS_PREFILL}")
        return PROMPT_ECHO_EXCLUDED
    if row.launch_only:
        return LAUNCH_ONLY_EXCLUDED
    if row.framework == "llama.cpp" and row.gpus > 1:
        return ("llama.cpp layer split: layers run on one GPU after another (neither tensor nor data parallel); "
                "not modelled")
    if not e.feasible:
        text = "; ".join(r.text for r in e.reasons if r.blocking)
        return f"infeasible in the engine: {text}"
    return None


def _row_regime(row: Measurement, plan: Plan) -> str:
    """The regime (uncertainty.REGIMES) a row's plan is in, read from the row (for a plan the engine can't run)."""
    return regime_for(row.regime == "train", row.regime == "decode", plan.parallel == "tensor", row.batch)


@dataclass(frozen=True)
class RowPrediction:
    """What the engine predicts for a row, before any comparison with its measured value."""

    plan: Plan
    estimate: Estimate
    regime: str  # one of uncertainty.REGIMES
    predicted: float | None  # in the row's metric; None: no prediction (infeasible)
    excluded: str | None  # why the row cannot be scored (None: it can)
    note: str  # the exclusion and the mapping note, joined


def row_gpu(row: Measurement, catalog: Catalog) -> GPU:
    """The row's GPU in the cluster its source states: nodes of row.node_gpus, row.fabric_gbits_per_node between,
    through host memory where its host had no peer-to-peer (row.gpu_p2p False)."""
    gpu = catalog.get(row.gpu)
    if row.gpu_p2p is False:
        gpu = gpu.without_p2p(load_link_kinds()[HOST_LINK])
    if row.node_gpus:
        gpu = gpu.in_nodes_of(row.node_gpus)
    return gpu.with_fabric_gbits(row.fabric_gbits_per_node) if row.fabric_gbits_per_node else gpu


@dataclass(frozen=True)
class _RowInputs:
    """What a row's estimate reads besides the efficiencies: the same at every trial value a search asks it at."""

    row: Measurement  # as known now (as_known_now)
    plan: Plan
    note: str  # the mapping note of plan_for
    gpu: GPU  # in the row's cluster (row_gpu)
    facts: Facts  # the committed facts with the row's rules and runtime variants


def _row_inputs(row: Measurement, catalog: Catalog, models: ModelCatalog) -> _RowInputs:
    """The plan, GPU and facts `row` is estimated with (its conditions as known now)."""
    row = as_known_now(row)
    facts = load_facts()
    plan, rules, note = plan_for(row, models, facts.rules)
    check_plan(plan)
    runtimes = facts.runtimes if row.custom_allreduce else nccl_only(facts.runtimes)
    said = f"validation row {row.id}"
    if row.grad_reduce_dtype:
        runtimes = with_training(runtimes, plan.runtime, grad_reduce_bytes=GRAD_REDUCE_BYTES[row.grad_reduce_dtype],
                                 grad_reduce_source=said)
    if row.tp_gather:
        runtimes = with_training(runtimes, plan.runtime, tp_gather=row.tp_gather, tp_gather_source=said)
    if row.fp8_params:
        runtimes = with_training(runtimes, plan.runtime, fp8_weights=True, fp8_weights_source=said)
    runtimes = opted_in(runtimes) if row.opt_in_allreduce else runtimes
    if row.build is not None:
        runtimes = with_build(runtimes, plan.runtime, row.build)
    if row.cuda_graphs is False:
        runtimes = with_ungraphed(runtimes, plan.runtime)
    if row.engine:
        graph_tokens, compiled_us = ungraphed_prefill(row.framework, row.engine)
        runtimes = with_engine_generation(runtimes, plan.runtime, *engine_host_us(row.framework, row.engine, row.gpus),
                                          eager_prefill_us(row.framework, row.engine, runtimes) or compiled_us,
                                          eager_decode_from(row.framework, row.engine), graph_tokens)
    gpu = row_gpu(row, catalog)
    if row.engine and engine_host_us(row.framework, row.engine)[1] is None:
        runtimes = with_prefill_chunk(runtimes, plan.runtime, engine_prefill_chunk(row, gpu))
    check_runtime(plan, facts.runtimes, facts.rules)
    return _RowInputs(row, plan, note, gpu, replace(facts, rules=rules, runtimes=runtimes))


# rows whose estimate inputs are kept (_memo_row_inputs): a search scores each row at dozens of trial values
ROW_INPUTS_MEMO = 16_384


def _committed(catalog: Catalog, models: ModelCatalog) -> bool:
    """Whether `catalog` and `models` are the committed ones, the only inputs the per-row memos may answer for."""
    return catalog is load_catalog() and models is validation_models()


@lru_cache(maxsize=ROW_INPUTS_MEMO)
def _memo_row_inputs(row: Measurement) -> _RowInputs:
    return _row_inputs(row, load_catalog(), validation_models())


def predict_row(row: Measurement, catalog: Catalog | None = None, models: ModelCatalog | None = None,
                adjust: Callable[[GPU, Efficiency], Efficiency] | None = None) -> RowPrediction:
    """The engine's prediction for one row (adjust None: the values estimates use, data/runtimes_tuned.yaml), with
    the conditions its source was read for since (as_known_now). Its plan, GPU and facts are memoized on the row
    with the committed catalog and models: the tuning searches score each row at many trial efficiencies."""
    facts = load_facts()
    catalog, models = catalog or facts.catalog, models or validation_models()
    inputs = _memo_row_inputs(row) if _committed(catalog, models) else _row_inputs(row, catalog, models)
    row, plan = inputs.row, inputs.plan
    e = estimate_gpu(plan, inputs.gpu, inputs.facts, adjust)
    why = exclusion(row, e)
    regime = regime_of(e) if e.feasible else _row_regime(row, plan)
    return RowPrediction(plan, e, regime, predicted_value(row, e), why, "; ".join(n for n in (why, inputs.note) if n))


def evaluate_row(row: Measurement, catalog: Catalog | None = None, models: ModelCatalog | None = None,
                 adjust: Callable[[GPU, Efficiency], Efficiency] | None = None) -> tuple[RowResult, Estimate]:
    """Estimate one row with the engine and compare (split from the id; 'excluded' with a reason)."""
    p = predict_row(row, catalog, models, adjust)
    predicted = p.predicted  # shown for excluded rows too when the engine gives one; never scored
    error = None if predicted is None else (predicted - row.value) / row.value * 100.0
    gpu = p.estimate.gpu
    result = RowResult(row.id, gpu.id, gpu.memory_class, row.model, p.regime, row.framework, p.plan.runtime,
                       p.plan.precision, row.batch, row.metric, row.value, predicted, error,
                       "excluded" if p.excluded else split_of(row.id), p.note, row.source, p.plan.model.kind)
    return result, p.estimate


# rows whose priors' score is kept (priors_result): every row of measurements.yaml (5,182 today) with room to grow
PRIORS_MEMO = 16_384


def priors_result(row: Measurement, catalog: Catalog, models: ModelCatalog) -> RowResult:
    """evaluate_row's result for `row` with its runtime's priors (priors_adjust). Memoized on the row with the
    committed catalog and models: leave one source out scores every row so before its folds, and `planner validate`'s
    split report (run_validation, priors) scores the same rows again."""
    if not _committed(catalog, models):
        return evaluate_row(row, catalog, models, priors_adjust(row))[0]
    return _memo_priors_result(row)


@lru_cache(maxsize=PRIORS_MEMO)
def _memo_priors_result(row: Measurement) -> RowResult:
    return evaluate_row(row, load_catalog(), validation_models(), priors_adjust(row))[0]


def run_validation(measurements: str | Path = MEASUREMENTS_FILE,
                   adjust: Callable[[GPU, Efficiency], Efficiency] | None = None,
                   priors: bool = False) -> ValidationReport:
    """Estimate every row of `measurements` and compare with the measured value, as estimates are made (`adjust`
    applied), or with each row's runtime priors (`priors`: the split by hash, whose test rows the tuned values of
    data/runtimes_tuned.yaml have seen)."""
    rows = load_measurements(measurements)
    catalog, models = load_catalog(), validation_models()
    if priors:
        return ValidationReport(tuple(priors_result(r, catalog, models) for r in rows), str(measurements))
    return ValidationReport(tuple(evaluate_row(r, catalog, models, adjust)[0] for r in rows), str(measurements))


# ---------------------------------------------------------------- tuning (tune split only)

# Tuned as little as can be: the fraction of DRAM bandwidth a runtime's kernels reach (per memory class), its GPU-side
# gap per kernel and its CPU dispatch time per kernel (runtimes whose host dispatches kernels one by one: eager
# PyTorch, 10-40 us per op across the published machines, FasterTransformer and DeepSpeed-Inference; adjust_for
# leaves it 0 where the profile has none), the software and host facts no datasheet gives, each one value per runtime
# family, never one per GPU or per row. Compute is not tuned: every runtime's GEMMs run at the GPU's measured matmul
# ceiling (data/gpus.yaml) x the profile's documented factor, and attention and integer work at their own published
# rates, so a tuned compute factor could only hide a missing mechanism. Leave one source out predicted left-out
# sources better with these than with compute factors tuned too, and than without the dispatch time (figures:
# validation/REPORT.md, 'Accuracy targets scored by source').
TUNABLE = tuple(TUNABLE_PARAMS)


def _grid(bounds: tuple[float, float], step: float) -> list[float]:
    """Multiples of `step` from the first at or above bounds[0] to the last at or below bounds[1] (6 decimals)."""
    lo, hi = bounds
    first = math.ceil(round(lo / step, 6))
    return [round((first + i) * step, 6) for i in range(int(math.floor(round(hi / step, 6))) - first + 1)]


# Each grid spans its parameter's physical bounds (planner.inputs.runtimes.TUNABLE_PARAMS, sources there): a fit
# outside them would be a number right for the wrong reason, so the search never sets one.
GRIDS = {"mem_bw_efficiency": _grid(TUNED_BW_BOUNDS, 0.01),  # 0.40 .. 0.95
         "launch_overhead_us": _grid(LAUNCH_GAP_US_BOUNDS, 0.1),  # 1.3 .. 2.1 us
         "host_us_per_kernel": _grid(HOST_US_BOUNDS, 1.0)}  # 4 .. 40 us
SWEEPS = 40  # coordinate sweeps at most; the search stops at the first sweep that moves nothing
MIN_TUNE_ROWS = 2  # a parameter is tuned only if at least this many tune rows can move it
# How far below its prior a DRAM fraction is probed for the rows it sets (movers): 0.10, the spread of the eager
# fractions the folds tune (0.45-0.55 against the priors' 0.80-0.85 is what a host-bound row pulls it to; REPORT.md)
DRAM_PROBE_BELOW_PRIOR = 0.10


def prior_params(runtime_id: str) -> dict[str, float]:
    """The runtime's priors (data/runtimes.yaml), never its tuned values: every search starts from them."""
    r = load_runtimes().get(runtime_id)
    return r.priors() | {f"compute_efficiency.{c}": v for c, v in r.compute_efficiency}


def adjust_for(runtime_id: str, params: dict[str, float],
                label: str = "trial values") -> Callable[[GPU, Efficiency], Efficiency]:
    dispatches = bool(load_runtimes().get(runtime_id).host_us_per_kernel)  # a host that dispatches op by op

    def adjust(gpu: GPU, eff: Efficiency) -> Efficiency:
        c = gpu.memory_class
        return replace(eff, mem_bw_efficiency=params[f"mem_bw_efficiency.{c}"],
                       compute_efficiency=params[f"compute_efficiency.{c}"],
                       launch_overhead_us=params["launch_overhead_us"],
                       host_us_per_kernel=params["host_us_per_kernel"] if dispatches else 0.0,
                       source=f"{label} for {runtime_id} (validation)")
    return adjust


def priors_adjust(row: Measurement) -> Callable[[GPU, Efficiency], Efficiency]:
    """Score `row` with its runtime's priors, not the tuned values estimates use (the untuned figures)."""
    runtime = FRAMEWORK_RUNTIME[row.framework]
    return adjust_for(runtime, prior_params(runtime), "priors")


UNPREDICTED_LOSS = 10.0  # a row the engine gives no prediction for weighs as a factor of e^10 off
ROW_TERM_MEMO = 400_000  # (row, runtime, values) terms kept: one leave-one-source-out run asks ~10^5 distinct ones


def _row_term(row: Measurement, runtime_id: str, params: dict[str, float], catalog, models) -> float:
    """One row's |log(predicted / measured)| at `params`. Only the four values its GPU's memory class reads matter
    (adjust_for), so with the committed catalog and models the term is memoized on them: a coordinate search and the
    folds of leave-one-source-out ask the same row at the same values again and again."""
    if not _committed(catalog, models):
        res, _ = evaluate_row(row, catalog, models, adjust_for(runtime_id, params))
        return abs(math.log(res.predicted / res.measured)) if res.predicted else UNPREDICTED_LOSS
    c = catalog.get(row.gpu).memory_class
    return _memo_row_term(row, runtime_id, c, params[f"mem_bw_efficiency.{c}"], params[f"compute_efficiency.{c}"],
                          params["launch_overhead_us"], params["host_us_per_kernel"])


@lru_cache(maxsize=ROW_TERM_MEMO)
def _memo_row_term(row: Measurement, runtime_id: str, c: str, bw: float, compute: float, launch_us: float,
                   host_us: float) -> float:
    params = {f"mem_bw_efficiency.{c}": bw, f"compute_efficiency.{c}": compute, "launch_overhead_us": launch_us,
              "host_us_per_kernel": host_us}
    res, _ = evaluate_row(row, load_catalog(), validation_models(), adjust_for(runtime_id, params))
    return abs(math.log(res.predicted / res.measured)) if res.predicted else UNPREDICTED_LOSS


def _loss(rows: list[Measurement], runtime_id: str, params: dict[str, float], catalog, models) -> float:
    """Mean |log(predicted / measured)| over the rows (symmetric in over- and under-estimates)."""
    total = 0.0
    for row in rows:
        total += _row_term(row, runtime_id, params, catalog, models)
    return total / len(rows)


def _moves(row: Measurement, runtime_id: str, a: dict[str, float], b: dict[str, float], catalog, models) -> bool:
    """Whether the row's loss differs between the values `a` and `b`."""
    return abs(_loss([row], runtime_id, a, catalog, models) - _loss([row], runtime_id, b, catalog, models)) > 1e-3


def movers(runtime_id: str, rows: list[Measurement], names: tuple[str, ...] = TUNABLE) -> dict[str, list[Measurement]]:
    """Per parameter of `names`, the rows whose loss moves between the ends of its grid (the others held at the
    priors): the rows that can inform it. A DRAM fraction's rows must also move within DRAM_PROBE_BELOW_PRIOR below
    its prior: a row whose time there is set by something else (the host's dispatch, the compute) measures that, and
    would only reach the fraction at a value far from the prior, where it bends the fraction to absorb a cost of its
    own (validation/REPORT.md, 'A host-bound row does not set a DRAM fraction')."""
    catalog, models = load_catalog(), validation_models()
    prior = prior_params(runtime_id)
    out: dict[str, list[Measurement]] = {}
    for name in names:
        kind = name.split(".")[0]
        probe = [dict(prior, **{name: v}) for v in (GRIDS[kind][0], GRIDS[kind][-1])]
        moved = [row for row in rows if _moves(row, runtime_id, probe[0], probe[1], catalog, models)]
        if kind == "mem_bw_efficiency":
            near = dict(prior, **{name: max(prior[name] - DRAM_PROBE_BELOW_PRIOR, GRIDS[kind][0])})
            moved = [row for row in moved if _moves(row, runtime_id, prior, near, catalog, models)]
        out[name] = moved
    return out


def tune_runtime(runtime_id: str, rows: list[Measurement], sweeps: int = SWEEPS,
                 names: tuple[str, ...] = TUNABLE) -> tuple[dict[str, float], dict]:
    """Coordinate search over `names` (default TUNABLE) on `rows` (scored rows of this runtime).

    Each sweep sets each parameter in turn to the grid value with the lowest loss, the others held; a tie
    (the loss doesn't depend on it) keeps the prior value. Sweeps go on until one moves nothing (at most `sweeps`):
    bandwidth and the kernel gap trade along a diagonal valley, where a fixed three sweeps stopped short of the
    minimum (validation/REPORT.md, 'a search that reaches its own minimum'). A parameter fewer than MIN_TUNE_ROWS
    rows can move, or that the profile holds at a measured prior or takes from its launch family
    (RuntimeProfile.fixed), stays at its prior.
    Returns (params, info) with the rows used and the loss before and after.
    """
    catalog, models = load_catalog(), validation_models()
    prior = prior_params(runtime_id)
    params = dict(prior)
    names = tuple(n for n in names if n not in load_runtimes().get(runtime_id).fixed())
    movable = [name for name, moved in movers(runtime_id, rows, names).items() if len(moved) >= MIN_TUNE_ROWS]
    before = _loss(rows, runtime_id, params, catalog, models) if rows else None
    for _ in range(sweeps if movable else 0):
        moved = False
        for name in movable:
            kind = name.split(".")[0]
            best_v, best = params[name], _loss(rows, runtime_id, params, catalog, models)
            for v in GRIDS[kind]:
                trial = _loss(rows, runtime_id, dict(params, **{name: v}), catalog, models)
                closer = abs(v - prior[name]) < abs(best_v - prior[name])
                if trial < best - 1e-9 or (abs(trial - best) <= 1e-9 and closer):
                    best_v, best = v, trial
            moved |= best_v != params[name]
            params[name] = best_v
        if not moved:
            break
    after = _loss(rows, runtime_id, params, catalog, models) if rows else None
    return params, {"rows": [r.id for r in rows], "tuned": movable, "loss_before": before, "loss_after": after,
                    "prior": prior}


def tune_all(measurements: str | Path = MEASUREMENTS_FILE) -> dict[str, tuple[dict[str, float], dict]]:
    """Tune every runtime on its scored tune-split rows (test rows are never read)."""
    rows = load_measurements(measurements)
    catalog, models = load_catalog(), validation_models()
    by_runtime: dict[str, list[Measurement]] = {}
    for row in rows:
        if split_of(row.id) != "tune":
            continue
        res, _ = evaluate_row(row, catalog, models)
        if res.split == "tune":
            by_runtime.setdefault(FRAMEWORK_RUNTIME[row.framework], []).append(row)
    return {rt: tune_runtime(rt, rs) for rt, rs in sorted(by_runtime.items())}
