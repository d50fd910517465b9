"""The explanation of one GPU ('Explain a GPU') without Streamlit: its caption, the step-time table and what its rows
add up to, the inputs behind its figures with their sources, the memory sentence and the likely range of its time.
Plain data in, plain data out (tests/views/test_explain_text.py); user and catalog text that ends up in Markdown goes
through format.md_escape.
"""

from __future__ import annotations

from collections.abc import Iterable

from planner.engine.host_speed import REFERENCE_HOST_SPEED
from planner.base.schema import DataFileError
from planner.engine.collectives import group_link
from planner.engine.estimate import Estimate
from planner.engine.feasibility import capacity_text
from planner.engine.gemm import MMA_ROWS, OVERLAP_EXPONENT, OVERLAP_ORIGIN
from planner.engine.phases import PREFILL
from planner.engine.roofline import CONTENTION_ORIGIN, OVERLAP_COMPUTE_SLOWDOWN
from planner.engine.train_layout import activations_in_flight, bubble_fraction, bubble_micro_steps, layout_of
from planner.engine.utilization import TRAIN_FORWARD_MULTIPLE, forward_flops_per_sample, mfu, tokens_per_s_per_gpu
from planner.inputs.catalog import SUSTAINED_RULE, Ceiling
from planner.inputs.jobs import Train
from planner.inputs.precisions import DECODE_LATENCY_ORIGIN
from planner.inputs.runtimes import Efficiency
from planner.validation import uncertainty
from planner.views.cluster_text import cluster_rows, shape_rows
from planner.views.format import fmt_seconds, md_escape


def range_sentence(e: Estimate, calibrated: bool = False) -> str:
    """The explanation's line on how far off the time may be: the 80 % range and what it rests on, or why there is
    none ('' for a GPU that can't run the plan)."""
    try:
        b = uncertainty.band_or_note(e, calibrated)
    except (DataFileError, OSError) as exc:
        return f"Likely range: the band file could not be read ({exc})."
    if isinstance(b, str):
        return f"Likely range: {b}."
    basis = uncertainty.band_basis(e) if b else ""
    if basis:
        return (f"Likely range (80 %, widened): {fmt_seconds(b[0])} – {fmt_seconds(b[1])}, {basis} "
                f"(data/uncertainty.yaml).")
    if b:
        regime = uncertainty.regime_of(e)
        return (f"Likely range (80 %): {fmt_seconds(b[0])} – {fmt_seconds(b[1])}, from the planner's errors on "
                f"published {regime} measurements of sources it was not tuned on (data/uncertainty.yaml)"
                + (", narrowed by your calibration" if calibrated else "") + ".")
    return ""


def _span(values: list[float]) -> str:
    lo, hi = f"{min(values):.0%}", f"{max(values):.0%}"
    return lo if lo == hi else f"{lo} to {hi}"


def _rate_text(g, runtime_factor: float) -> str:
    """How a group's FLOP rate follows from the GPU's matmul ceiling, or from the datasheet peak for an attention
    kernel with a known rate ('' for groups without FLOPs)."""
    if not g.flops:
        return ""
    if g.peak_fraction:
        return (f"; rate {g.achieved_tflops:,.4g} TFLOPS = datasheet peak {g.peak_tflops:,.4g} x {g.peak_fraction:.2f} "
                "(the attention kernel's own rate: FlashAttention-2's fraction of peak on this GPU generation x the "
                "kernel's speed relative to it, or the runtime's own kernel's fraction, named in its formula)")
    kernel = g.achieved_tflops / (g.ceiling_tflops * runtime_factor * g.shape_efficiency) if g.ceiling_tflops else 1.0
    return (f"; rate {g.achieved_tflops:,.4g} TFLOPS = ceiling {g.ceiling_tflops:,.4g} x runtime {runtime_factor:.2f}"
            f" x GEMM shape {g.shape_efficiency:.2f}" + (f" x kernel {kernel:.2f}" if abs(kernel - 1) > 1e-3 else ""))


# What the step-time table's rows add up to, above it in Explain.
STEP_TIME_INTRO = (
    "Each op group of each step takes **max(FLOPs ÷ (peak × compute efficiency), bytes ÷ (bandwidth × bandwidth "
    f"efficiency))**, except GEMMs run as tensor-core tiles ({MMA_ROWS} rows or more), whose loads and MMAs overlap "
    f"only in part: **(compute^p + memory^p)^(1/p)**, p = {OVERLAP_EXPONENT:g} (their rows say so); a step adds "
    "**kernels × launch overhead**; the job is the sum over steps and passes (a pass = one batch through the model). "
    "The larger side limits the group.")
# What the step-time table's columns count, under it.
STEP_TIME_UNITS = ("TFLOP: 10^12 floating-point operations; GB moved: DRAM bytes read and written / 10^9; FLOP/byte: "
                   "the two's ratio; TFLOP, GB and seconds are for the whole job (all steps and passes).")


def _overlap_text(g) -> str:
    """How a group's compute and memory times combine into its time ('' for the sharp roofline corner)."""
    if not g.overlap_exponent:
        return ""
    return (f"; time = (compute^p + memory^p)^(1/p), p = {g.overlap_exponent:g}: a tiled GEMM's loads and MMAs "
            f"overlap only in part ({OVERLAP_ORIGIN})")


def _dispatch_text(eff: Efficiency, phase: str) -> str:
    """The host's dispatch per kernel of a phase in words: the runtime's own, plus an eager prefill's (a runtime that
    replays CUDA graphs for its decode steps only: Efficiency.prefill_host_us_per_kernel)."""
    terms = [f"{eff.host_us_per_kernel:g} us of Python dispatch"] if eff.host_us_per_kernel else []
    if phase == PREFILL and eff.prefill_host_us_per_kernel:
        terms.append(f"{eff.prefill_host_us_per_kernel:g} us of CPU launching each kernel of the prompt pass (no "
                     "CUDA graph)")
    return "steps x kernels x (" + " + ".join(terms or ["0 us"]) + ")"


def _time_row(ph, steps: str, group: str, seconds_per_pass: float, limited_by: str, formula: str) -> dict:
    """A step-table row of time with no FLOPs or bytes of its own (host work, collectives, contention): seconds per
    pass x the phase's passes."""
    return {"phase": ph.name, "op group": group, "steps × passes": steps, "TFLOP": 0.0, "GB moved": 0.0,
            "FLOP/byte": 0.0, "compute s": 0.0, "memory s": 0.0, "time s": seconds_per_pass * ph.passes,
            "limited by": limited_by, "formula": formula}


def step_time_rows(e: Estimate) -> list[dict]:
    """The 'Explain a GPU' step-time table: each op group of each phase, then its launches and communication;
    seconds and work are for the whole job (all passes)."""
    rows = []
    for ph in e.phases:
        steps = f"{ph.steps:,} × {ph.passes:,.4g}"
        for g in ph.groups:
            rows.append({"phase": ph.name, "op group": g.name, "steps × passes": steps,
                         "TFLOP": g.flops * ph.passes / 1e12, "GB moved": g.bytes * ph.passes / 1e9,
                         "FLOP/byte": g.flops / g.bytes if g.bytes else 0.0, "compute s": g.compute_s * ph.passes,
                         "memory s": g.memory_s * ph.passes, "time s": g.time_s * ph.passes, "limited by": g.bound,
                         "formula": g.formula + _rate_text(g, e.efficiency.compute_efficiency) + _overlap_text(g)})
        if ph.groups or ph.kernels_per_step:  # a training layout's collectives-only phases launch no kernels
            rows.append({"phase": ph.name, "op group": f"kernel launches ({ph.kernels_per_step:.0f} per step)",
                         "steps × passes": steps, "TFLOP": 0.0, "GB moved": 0.0, "FLOP/byte": 0.0, "compute s": 0.0,
                         "memory s": 0.0, "time s": ph.overhead_s * ph.passes, "limited by": "overhead",
                         "formula": f"steps x kernels x {e.efficiency.launch_overhead_us:g} us"})
        if ph.latency_s:
            rows.append({"phase": ph.name, "op group": "decode-attention latency (one call per layer per step)",
                         "steps × passes": steps, "TFLOP": 0.0, "GB moved": 0.0, "FLOP/byte": 0.0, "compute s": 0.0,
                         "memory s": 0.0, "time s": ph.latency_s * ph.passes, "limited by": "overhead",
                         "formula": f"steps x {ph.latency_s / ph.steps * 1e6:,.4g} us: each layer's attention call "
                                    f"takes a fixed latency beyond its KV bytes ({DECODE_LATENCY_ORIGIN})"})
        if ph.host_bound_s:
            rows.append(_time_row(ph, steps, "waiting for the CPU (host-bound dispatch)", ph.host_bound_s, "overhead",
                                  _dispatch_text(e.efficiency, ph.name) + ", minus the GPU time it overlaps" + (
                                      f"; the host waits for the quantized linear layers after every call (a device "
                                      f"synchronize), so their {ph.synced_s * ph.passes:,.4g} s of GPU time overlap "
                                      "none of it" if ph.synced_s else "")))
        if ph.step_host_s:
            rounds = "prefill chunks" if ph.steps == 1 else "steps"
            rows.append(_time_row(ph, steps, "host work per step (the GPU waits)", ph.step_host_s, "overhead",
                                  f"{rounds} x {e.efficiency.step_host_us:g} us of the runtime's CPU work on the "
                                  "critical path (graph build, scheduling, sampling: data/runtimes.yaml)"
                                  + per_seq_text(e.efficiency)))
        if ph.host_wait_s:
            eff = e.efficiency
            idle = (f" + {ph.idle_expert_ops:,.0f} operators on idle experts x {eff.idle_op_us:g} us: the runtime's "
                    "Python loop over each MoE layer's experts, a torch.where sync each, data/runtimes.yaml "
                    "moe_expert_loop" if ph.idle_expert_ops else "")
            rows.append(_time_row(ph, steps, "device syncs the host waits on", ph.host_wait_s, "overhead",
                                  f"steps x ({ph.host_syncs:,.0f} device-to-host round trips x {eff.sync_us:g} us"
                                  f"{idle}); a quantized library's synchronize per call, the expert loop's per expert"))
        if ph.comm_s or ph.comm_hidden_s:
            hidden = (f"; {ph.comm_hidden_s * ph.passes:,.4g} s more runs under the compute "
                      f"({overlap_text(e)})" if ph.comm_hidden_s else
                      f"; not overlapped with compute ({overlap_text(e)})" if ph.name == "train micro-step"
                      else "; not overlapped with compute")
            rows.append(_time_row(ph, steps, "GPU-to-GPU communication", ph.comm_s, "communication",
                                  f"ring, {ph.comm_calls:,.4g} collectives per step, each at NCCL's fastest "
                                  f"protocol for its size: bytes sent / the protocol's bus bandwidth + its call "
                                  f"latency + ring steps x its hop latency"
                                  + (" (a runtime's own all-reduce: its call and per-peer latencies + the bytes it "
                                     "moves at its share of the NVLink bandwidth, data/custom_allreduce.yaml)"
                                     if "the runtime's" in ph.comm_protocols else "")
                                  + f" ({ph.comm_protocols}) = "
                                  f"{(ph.comm_s + ph.comm_hidden_s) / ph.steps * 1e6:,.4g} us per step, {ph.link}"
                                  + hidden))
        if ph.contention_s:
            rows.append(_time_row(ph, steps, "compute slowed beside the collectives", ph.contention_s, "communication",
                                  f"{ph.comm_hidden_s * ph.passes:,.4g} s under the compute x "
                                  f"{OVERLAP_COMPUTE_SLOWDOWN:g} / (1 + {OVERLAP_COMPUTE_SLOWDOWN:g}): compute "
                                  f"beside an NCCL collective runs {OVERLAP_COMPUTE_SLOWDOWN:.1%} slower on average "
                                  f"(its kernel holds SMs, its copies HBM bandwidth; {CONTENTION_ORIGIN})"))
    return rows


def per_seq_text(eff: Efficiency) -> str:
    """The step host row's per-sequence part, where the runtime's engine generation has one (vLLM V0)."""
    if not eff.host_us_per_seq:
        return ""
    return (f", + batch x {eff.host_us_per_seq:g} us a sequence of the engine generation's CPU work (vLLM V0: "
            "data/serving.yaml engines)")


def overlap_text(e: Estimate) -> str:
    """Where the share of data-parallel collectives that may hide under compute comes from: the runtime's schedule
    for the plan's layout (its training block) or its one overlap figure."""
    eff, w = e.efficiency, e.plan.workload
    t = eff.training
    sharding = getattr(w, "sharding", "")
    layout = "ddp" if e.parallelism == "data" else e.parallelism
    if t is not None and layout in dict(t.overlap):
        exposed = (f", less {t.exposed_layers:g} of {e.plan.model.shard_units} layers' collectives left exposed"
                   if t.exposed_layers else "")
        return (f"{eff.dp_comm_overlap:.3g} may overlap: {eff.runtime}'s {layout} schedule "
                f"{dict(t.overlap)[layout]:g}{exposed}; data/runtimes.yaml training.overlap: {t.overlap_source}")
    return f"{eff.dp_comm_overlap:g} overlap{f' under {sharding}' if sharding else ''}, data/runtimes.yaml"


def step_time_tables(e: Estimate) -> tuple[list[dict], list[dict]]:
    """The step-time table as two that each fit a laptop's width: each row's figures, then each row's formula (next
    to ten columns of figures a formula gets a column a few words wide)."""
    rows = step_time_rows(e)
    return ([{k: v for k, v in r.items() if k != "formula"} for r in rows],
            [{"phase": r["phase"], "op group": r["op group"], "formula": r["formula"]} for r in rows])


def _sustained_row(ceiling: Ceiling) -> list[tuple[str, str, str]]:
    """The clock row of a ceiling scaled from a burst to the power-saturated figure (catalog SUSTAINED_RULE)."""
    if not ceiling.burst_tflops:
        return []
    share = ceiling.tflops / ceiling.burst_tflops
    return [("Clock under a long load", f"sustained {ceiling.tflops:,.4g} TFLOPS = {share:.0%} of the "
             f"{ceiling.burst_tflops:,.4g} TFLOPS burst (boost-clock) ceiling", SUSTAINED_RULE)]


def inputs_rows(e: Estimate, auto_batch: bool) -> list[tuple[str, str, str]]:
    """(input, value, source) behind the figures of one GPU: peaks, bandwidth, efficiencies, batch, price."""
    g, eff = e.gpu, e.efficiency
    asked = e.setup.precision.compute_path
    path = g.run_path(asked) or asked
    peak = g.peak_tflops(path)
    where = ("data/cpus.yaml (cores x base clock x FMA lanes x 2, or the extension's rate)",
             "data/cpus.yaml (memory channels x MT/s x 8 B)") if g.cpu else ("data/gpus.yaml (datasheet)",) * 2
    if g.kind == "cpu" and not g.cpu:
        where = ("measured by python -m planner.bench",) * 2
    where = (where[0] + _announced_note(g, ("dense_tflops", f"dense_tflops.{path}")),
             where[1] + _announced_note(g, ("mem_bw_gbps",)))
    ceiling = g.ceiling(path)
    shapes = [grp.shape_efficiency for ph in e.phases for grp in ph.groups if grp.flops and grp.shape_efficiency < 1]
    overlap = next((grp.overlap_exponent for ph in e.phases for grp in ph.groups if grp.overlap_exponent), 0.0)
    rows = [
        (f"Peak {path} TFLOPS (dense)" + (f", as {asked} is not available" if path != asked else ""),
         f"{peak:g}" if peak else "none", where[0]),
        (f"Matmul ceiling {path} ({'measured' if ceiling.measured else 'derived'})",
         f"{ceiling.tflops:,.4g} TFLOPS = {ceiling.ratio:.0%} of the datasheet peak" if peak else "none", ceiling.how),
        *_sustained_row(ceiling),
        ("GEMM shape efficiency", (_span(shapes) + " of the ceiling" if shapes else
                                   "100 % (shapes fill whole tiles and waves, or are not known)")
         + f" on {g.sm_count or 'unknown'} SMs",
         "tile and wave quantization of the op groups' GEMMs, 128 x 128 tiles (planner/engine/gemm.py; NVIDIA Matrix "
         "Multiplication Background User's Guide)" + (f"; SM count: {g.sm_source}" if g.sm_source else "")),
        ("GEMM compute and memory overlap", f"p = {overlap:g}: time = (compute^p + memory^p)^(1/p), between "
         "their sum (p = 1) and the larger (the sharp roofline)" if overlap else
         "none modelled: the larger of compute and memory time (GEMVs, traced or formula profiles, a CPU)",
         f"planner/engine/gemm.py, {OVERLAP_ORIGIN}"),
        ("DRAM bandwidth", f"{g.mem_bw_gbps:,.0f} GB/s", where[1]),
        ("Compute efficiency", f"{eff.compute_efficiency:.0%} of the matmul ceiling", eff.source),
        ("Bandwidth efficiency", f"{eff.mem_bw_efficiency:.0%} of peak", eff.source),
        ("Launch overhead", f"{eff.launch_overhead_us:g} us per kernel (x{eff.kernels_per_layer_factor:g} kernels)",
         eff.source),
        ("Host dispatch", (f"{eff.host_us_per_kernel:g} us of CPU per kernel (overlaps the GPU's work)"
                           if eff.host_us_per_kernel else "none (CUDA graphs or a compiled runtime)")
         + (f"; prompt passes launched kernel by kernel (no CUDA graph): {eff.prefill_host_us_per_kernel:g} us of "
            "CPU more per kernel, overlapping the GPU's work" if eff.prefill_host_us_per_kernel else ""),
         eff.source),
        host_speed_row(e.plan.host_speed),
        *transformers_rows(e),
        ("Batch per GPU", f"{e.batch:,} (largest that fits: {e.max_batch:,})",
         "auto: the cheapest that fits" if auto_batch else "yours"),
        ("Parallelism", f"{e.parallelism}, {e.plan.gpus} GPU(s)", "planner"),
        attention_row(e),
    ]
    rows += layout_rows(e) + shape_rows(e) + link_rows(e) + cluster_rows(e) + mfu_rows(e)
    rows.append(model_row(e.plan.model))
    price = e.price
    if price:
        rows.append((f"Price ({e.plan.price_tier})", f"${price.usd_hr:.3f}/GPU-h",
                     f"{price.origin}, {price.date or 'undated'}: {price.source}"))
    return rows


def mfu_rows(e: Estimate) -> list[tuple[str, str, str]]:
    """(input, value, source) of a training estimate's model FLOPs utilization, with its arithmetic; [] otherwise."""
    share = mfu(e)
    if share is None:
        return []
    path = e.gpu.run_path(e.setup.precision.compute_path)
    return [*([("Where the training time goes", parts, "each op group's time over the job's (the step-time table "
                "below), with the share of its path's dense peak its FLOPs reach; launch gaps and communication "
                "left exposed as parts of their own: MFU is what is left of the peak after all of them")]
              if (parts := time_parts_text(e)) else []),
            ("Model FLOPs utilization (MFU)",
             f"{share:.1%} = {TRAIN_FORWARD_MULTIPLE} x {forward_flops_per_sample(e):.4g} forward FLOPs per sample x "
             f"{e.plan.workload.items:,} samples / ({e.seconds:,.1f} s x {e.plan.gpus} GPU(s) x "
             f"{e.gpu.peak_tflops(path):g} {path} TFLOPS dense peak); {tokens_per_s_per_gpu(e) or 0:,.0f} tokens/s "
             "per GPU",
             "model FLOPs = 3 x the forward's (PaLM, Chowdhery et al. 2022, appendix B); recomputation under "
             "checkpointing is not counted (planner/engine/utilization.py)"
             + ("; an FP8 run (Transformer Engine) against the BF16 dense peak, as TorchTitan and NVIDIA report "
                "FP8 runs" if e.setup.precision.fp8_training else ""))]


def time_parts_text(e: Estimate) -> str:
    """'linear layers (fwd+bwd) 62 % (0.81 of peak), attention backward 9 % (0.52 of peak), ...': each part's share
    of the job's time, largest first, over every phase; '' without time."""
    parts: dict[str, list[float]] = {}  # name -> [seconds, FLOPs, FLOPs the dense peak does in those seconds]
    for ph in e.phases:
        for g in ph.groups:
            p = parts.setdefault(g.name, [0.0, 0.0, 0.0])
            p[0] += g.time_s * ph.passes
            p[1] += g.flops * ph.passes
            p[2] += g.time_s * ph.passes * g.peak_tflops * 1e12
        for name, seconds in (("kernel launch gaps", ph.overhead_s + ph.latency_s), ("exposed communication",
                                                                                   ph.comm_s)):
            parts.setdefault(name, [0.0, 0.0, 0.0])[0] += seconds * ph.passes
    total = sum(p[0] for p in parts.values())
    if not total:
        return ""
    shown = sorted(((n, p) for n, p in parts.items() if p[0] / total >= 0.005), key=lambda kv: -kv[1][0])
    # a memory-bound part's share of the peak (an optimizer update's 0.02) says nothing: shown from a tenth up
    return ", ".join(f"{n} {p[0] / total:.0%}" + (f" ({p[1] / p[2]:.2f} of peak)" if p[2] and p[1] >= 0.1 * p[2]
                                                  else "") for n, p in shown)


def _announced_note(g, fields: tuple[str, ...]) -> str:
    """'; announced by the vendor, not measured by others: <what was searched>' when data/gpus.yaml marks one of
    `fields` of this GPU as announced (GPU.announced), else ''."""
    if not any(f in g.announced for f in fields):
        return ""
    return f"; announced by the vendor, not measured by others: {g.announced_source}"


def link_rows(e: Estimate) -> list[tuple[str, str, str]]:
    """(input, value, source) of the link the plan's collectives run over, with NCCL's protocols on it; [] without
    collectives."""
    rows, seen = [], set()
    for phase in (ph for ph in e.work if ph.comm):
        key = (phase.comm_gpus, phase.comm_stride)
        link = group_link(e.gpu, *key)
        if link is None or key in seen:
            continue
        seen.add(key)
        apart = f", {phase.comm_stride} ranks apart ({phase.name})" if phase.comm_stride > 1 else ""
        rows.append(("GPU-to-GPU link", f"{phase.comm_gpus} GPUs{apart} over {link.describe()}; NCCL protocols: "
                     f"{link.describe_protocols()}",
                     f"data/interconnects.yaml, link '{link.kind.id}': {link.kind.source}"))
    return rows


def layout_rows(e: Estimate) -> list[tuple[str, str, str]]:
    """(input, value, source) of a training layout's degrees, micro-batches per step and pipeline bubble; [] when
    the estimate splits no model (tp x pp x cp = 1)."""
    s, w = e.setup, e.plan.workload
    if not isinstance(w, Train) or s.tp * s.pp * s.cp == 1:
        return []
    dp = e.data_ranks
    m = w.accum_for(e.batch, dp)
    rows = [("Training layout", f"{layout_of(s).describe()} x DP {dp} = {e.plan.gpus} GPUs; micro-batch {e.batch:,},"
             f" {m:,} micro-batches per optimizer step per data-parallel rank, global batch {e.batch * m * dp:,}",
             "planner/engine/train_layout.py (Megatron-LM's rank order: tp, cp, dp, pp)")]
    if s.pp > 1:
        idle = bubble_micro_steps(s.pp, s.vpp)
        rows.append(("Pipeline bubble", f"(p-1)/v = ({s.pp}-1)/{s.vpp} = {idle:.3g} idle micro-steps per optimizer "
                     f"step; (p-1)/v / (m + (p-1)/v) = {bubble_fraction(s.pp, m, s.vpp):.1%} of it; activations of "
                     f"{activations_in_flight(s.pp, s.vpp):.3g} micro-batches of the whole model in flight",
                     "Narayanan et al. 2021 (Megatron-LM, SC21) sec. 2.2; Korthikanti et al. 2022 sec. 4.2.3"))
    return rows


def model_row(m) -> tuple[str, str, str]:
    """The model: its parameters and description, its source and, where the profile disagrees with what its source
    or checkpoint reports (a Hub checkpoint's tensors more than 2 % from the config's count), that note."""
    note = f"; cross-check: {m.cross_check}" if m.cross_check else ""
    return ("Model", f"{m.params:,} parameters · {m.describe()}", m.source + note)


def attention_row(e: Estimate) -> tuple[str, str, str]:
    """(input, value, source) for the attention kernel this GPU runs: its memory order and speed vs FlashAttention-2."""
    k, chosen = e.setup.attention, e.plan.attention
    if any(r.code == "attention" and r.blocking for r in e.reasons):
        return ("Attention kernel", f"{chosen}: none runs on this GPU (reasons above)", k.source)
    name = k.id if k.id == chosen else f"{k.id} ({chosen}'s pick on this GPU)"
    memory = "S x S scores in DRAM, O(S^2)" if k.scores_materialized else "no score matrix, O(S)"
    return ("Attention kernel", f"{name}: {memory}, {k.speed_vs_fa2:.2f}x FlashAttention-2's FLOP rate",
            k.speed_source or k.source)


def md_table(header: list[str], rows: Iterable[Iterable]) -> str:
    """A small Markdown table (it wraps long text, unlike a dataframe); every cell escaped."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(md_escape(x, 400) for x in r) + " |" for r in rows])


def memory_sentence(e: Estimate) -> str:
    """Memory per GPU against the usable memory and what it follows from, all in decimal GB."""
    g, need, usable = e.gpu, e.memory.total_gb, e.usable_gb
    verdict = (f"fits: {need / g.vram_gb:.0%} of the card, under the {e.plan.memory_target:.0%} memory target "
               f"({usable - need:.2f} GB spare)" if need <= usable else f"does NOT fit, {need - usable:.2f} GB short")
    return (f"Total **{need:.3g} GB** per GPU at batch {e.batch:,}, of {usable:.3g} GB usable ("
            f"{capacity_text(g, e.plan.memory_target)}): {verdict}.")


def gpu_caption(e: Estimate) -> str:
    g = e.gpu
    if g.cpu:
        c = g.cpu
        return (f"CPU · {g.architecture} · {c.cores} cores ({c.threads} threads) at {c.base_ghz:g} GHz base · "
                f"{c.isa_text()} · host RAM {g.vram_gib:g} GiB ({g.vram_gb:.3g} GB, {c.memory_config}) at "
                f"{g.mem_bw_gbps:,.1f} GB/s · {g.market}")
    if g.kind == "cpu":
        return f"CPU (measured) · {g.vram_gb:.3g} GB host RAM at {g.mem_bw_gbps:,.1f} GB/s measured"
    return (f"{g.architecture} · {g.sm} · {g.vram_gib:g} GiB ({g.vram_gb:.3g} GB) {g.memory_type} at "
            f"{g.mem_bw_gbps:,.0f} GB/s · {g.market}")


def transformers_rows(e: Estimate) -> list[tuple[str, str, str]]:
    """The transformers release the plan names, if any, and the per-layer sync its FlashAttention-2 classes add."""
    version = e.plan.transformers
    if version is None:
        return []
    types = e.setup.rotary_sync_types
    text = (f"{version}: the FlashAttention-2 classes of {', '.join(types)} read position_ids[:, -1].max().item() "
            f"in every layer: a device-to-host round trip a layer each forward ({e.efficiency.sync_us:g} us), after "
            "which the host waits for the q/k/v projections (charged where the model is of one of those types: "
            "the linear layers' formula says so)" if types else
            f"{version}: no per-layer sync in its {e.plan.attention} attention classes")
    return [("transformers release", text, "yours (--transformers; data/runtimes.yaml pytorch-eager rotary_sync: "
             "the releases read)")]


def host_speed_row(host_speed: float) -> tuple[str, str, str]:
    """The host CPU's speed as the step-time table shows it: the factor every host-side time was divided by."""
    if host_speed == REFERENCE_HOST_SPEED:
        text = "the reference hosts' (1x): the runtimes' host times as measured"
    else:
        text = (f"{host_speed:g}x the reference hosts' single-thread speed: host dispatch per kernel and the "
                f"engine's CPU work per step and per sequence (and a serving front end's per request) each divided by "
                f"{host_speed:g}, the GPU's time not")
    return ("Host CPU speed", text, "yours (--host-speed; planner/engine/host_speed.py: the H100 and A100 servers "
            "the runtimes' host constants were measured on are 1)" if host_speed != REFERENCE_HOST_SPEED
            else "planner/engine/host_speed.py")
