"""Roofline timing: each op group takes max(FLOPs / achieved peak, bytes / achieved bandwidth); a step adds
kernel-launch overhead and collective time. Decode sums the steps over KV positions exactly (closed form; a group
capped at a position, a sliding window, in two affine pieces)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from collections.abc import Iterable

from planner.base.units import BYTES_PER_GB, FLOPS_PER_TFLOP
from planner.engine.gemm import OVERLAP_EXPONENT, gemm_shape, overlapped_seconds, shape_efficiency
from planner.engine.collectives import call_protocol, custom_allreduce_seconds, custom_link, group_link
from planner.engine.phases import PREFILL, Phase
from planner.inputs.catalog import ALU_PATH, GPU, PROTOCOL_NAMES, Link
from planner.inputs.runtimes import Efficiency
from planner.inputs.work import SMALL_KERNEL_US, OpGroup, grid_rate_factor


@dataclass(frozen=True)
class GroupTime:
    """One op group summed over a phase's steps (one pass)."""

    name: str
    formula: str
    compute_path: str
    flops: float
    bytes: float
    peak_tflops: float  # datasheet dense peak of the path run
    achieved_tflops: float
    achieved_gbps: float
    compute_s: float  # sum over steps of FLOPs / achieved peak
    memory_s: float  # sum over steps of bytes / achieved bandwidth
    time_s: float  # sum over steps of max(compute, memory)
    compute_bound_s: float  # part of time_s spent in steps where compute is the limit
    ceiling_tflops: float = 0.0  # measured (or derived) matmul ceiling of the path
    ceiling_how: str = ""  # where the ceiling comes from (Ceiling.how)
    shape_efficiency: float = 1.0  # tile and wave quantization of the group's GEMMs (planner.engine.gemm)
    peak_fraction: float = 0.0  # > 0: the rate is the datasheet peak x this (a fused attention kernel's own rate)
    overlap_exponent: float = 0.0  # > 0: time = (compute^p + memory^p)^(1/p) (gemm.overlapped_seconds); 0: the larger
    ceiling_burst_tflops: float = 0.0  # > 0: the boost-clock burst ceiling the sustained one was scaled from

    @property
    def bound(self) -> str:
        return "compute" if self.compute_bound_s > self.time_s / 2 else "memory"


@dataclass(frozen=True)
class PhaseTime:
    name: str
    steps: int
    passes: float
    groups: tuple[GroupTime, ...]
    kernels_per_step: float
    overhead_s: float  # per pass: GPU-side launch gaps
    comm_s: float  # per pass: collective time not hidden under compute
    host_s: float = 0.0  # per pass: CPU dispatch, overlapping the GPU's work
    step_host_s: float = 0.0  # per pass: CPU work on the critical path of each step (the GPU waits for it)
    comm_hidden_s: float = 0.0  # per pass: collective time that runs under the compute (data parallel only)
    link: str = ""  # the link the collectives use, in words
    comm_calls: float = 0.0  # collective calls per step
    comm_protocols: str = ""  # the NCCL protocol each kind of collective takes, in words
    latency_s: float = 0.0  # per pass: the kernels' own fixed latencies (OpGroup.latency_s: decode attention)
    contention_s: float = 0.0  # per pass: how much longer the compute beside a hidden collective takes (contention_s)
    synced_s: float = 0.0  # per pass: GPU time of the groups the host waits for every call (OpGroup.host_synced)
    host_wait_s: float = 0.0  # per pass: round trips the host waits on and idle-expert dispatches (host_wait_seconds)
    host_syncs: float = 0.0  # per step: device-to-host round trips (Phase.host_syncs)
    idle_expert_ops: float = 0.0  # per step: an expert loop's operators on idle experts (Phase.idle_expert_ops)

    @property
    def gpu_s(self) -> float:
        """GPU time per pass: the op groups, their kernels' fixed latencies and the launch gaps."""
        return sum(g.time_s for g in self.groups) + self.latency_s + self.overhead_s

    @property
    def host_bound_s(self) -> float:
        """Per pass, how much longer the CPU takes to dispatch the kernels than the GPU takes to run them (the groups
        it waits for, synced_s, hide none of its dispatch: host_bound_seconds)."""
        return host_bound_seconds(self.host_s, self.gpu_s, self.synced_s)

    @property
    def pass_s(self) -> float:
        return self.gpu_s + self.host_bound_s + self.step_host_s + self.host_wait_s + self.comm_s + self.contention_s

    @property
    def total_s(self) -> float:
        return self.pass_s * self.passes

    def split(self) -> dict[str, float]:
        """Seconds over all passes by limit: compute-bound, memory-bound, overhead, communication."""
        cb = sum(g.compute_bound_s for g in self.groups)
        mb = sum(g.time_s for g in self.groups) - cb
        return {"compute": cb * self.passes, "memory": mb * self.passes,
                "overhead": (self.overhead_s + self.latency_s + self.host_bound_s + self.step_host_s
                             + self.host_wait_s) * self.passes,
                "communication": (self.comm_s + self.contention_s) * self.passes}


LIMITS = ("compute", "memory", "overhead", "communication")  # what a step's time is limited by


def time_split(phases: Iterable[PhaseTime]) -> dict[str, float]:
    """Seconds of all phases by what limits them (LIMITS), summed over phases; {} when nothing is timed."""
    phases = tuple(phases)
    split = dict.fromkeys(LIMITS, 0.0) if phases else {}
    for ph in phases:
        for k, v in ph.split().items():
            split[k] += v
    return split


def work_split(work: Iterable[Phase], gpu: GPU, eff: Efficiency) -> dict[str, float]:
    """time_split(time_phase(ph, gpu, eff) for ph in work), the same sums in the same order, from phase_split."""
    work = tuple(work)
    split = dict.fromkeys(LIMITS, 0.0) if work else {}
    for ph in work:
        for k, v in phase_split(ph, gpu, eff).items():
            split[k] += v
    return split


def _sum_affine(a: float, b: float, p0: int, n: int) -> float:
    """Sum of a + b*p for p = p0 .. p0+n-1."""
    return n * a + b * (n * p0 + n * (n - 1) / 2)


def sum_max_affine(c0: float, c1: float, m0: float, m1: float, p0: int, n: int) -> tuple[float, float]:
    """Sum over p = p0..p0+n-1 of max(c0 + c1 p, m0 + m1 p); returns (total, part where compute wins)."""
    if n <= 0:
        return 0.0, 0.0
    d0, d1 = c0 - m0, c1 - m1  # compute minus memory: affine, so it changes sign at most once
    first, last = d0 + d1 * p0, d0 + d1 * (p0 + n - 1)
    if first >= 0 and last >= 0:
        s = _sum_affine(c0, c1, p0, n)
        return s, s
    if first < 0 and last < 0:
        return _sum_affine(m0, m1, p0, n), 0.0
    cross = -d0 / d1  # p where both are equal; a tie counts as compute-bound
    if d1 > 0:  # memory wins before the crossing (p < cross), compute from it on
        k = max(0, min(n, math.ceil(cross) - p0))
        mem, comp = _sum_affine(m0, m1, p0, k), _sum_affine(c0, c1, p0 + k, n - k)
    else:  # compute wins up to the crossing (p <= cross), memory after it
        k = max(0, min(n, math.floor(cross) - p0 + 1))
        comp, mem = _sum_affine(c0, c1, p0, k), _sum_affine(m0, m1, p0 + k, n - k)
    return mem + comp, comp


def position_spans(cap: int, p0: int, n: int) -> tuple[tuple[int, int, bool], ...]:
    """Steps p0 .. p0+n-1 as spans (first position, steps, past the cap): a group capped at `cap` (OpGroup.cap_pos,
    0 = none) grows with p below it and costs a + b x cap from it on."""
    if not cap or p0 + n <= cap:
        return ((p0, n, False),)
    below = max(0, min(n, cap - p0))
    return ((p0, below, False), (cap, n - below, True)) if below else ((p0, n, True),)


def _sum_terms(terms: tuple[float, float, float, float], cap: int, p0: int, n: int) -> tuple[float, float]:
    """sum_max_affine over the steps, span by span when the group is capped at a position (cap > 0)."""
    return capped_sum(terms, cap, p0, n) if cap else sum_max_affine(*terms, p0, n)


def capped_sum(terms: tuple, cap: int, p0: int, n: int, summed=sum_max_affine) -> tuple:
    """(total, compute-bound part) of a group capped at position `cap` over n steps from p0: span by span
    (position_spans), a flat span at the cap's terms. `summed`: sum_max_affine, or the catalog sweep's twin on arrays
    (planner.engine.sweep.sum_max_affine), whose terms are then arrays of GPUs and batches."""
    c0, c1, m0, m1 = terms
    total = comp = 0.0
    for start, steps, flat in position_spans(cap, p0, n):
        t, c = (summed(c0 + c1 * cap, 0.0, m0 + m1 * cap, 0.0, start, steps) if flat
                else summed(c0, c1, m0, m1, start, steps))
        total, comp = total + t, comp + c
    return total, comp


def _sum_work(a: float, b: float, cap: int, p0: int, n: int) -> float:
    """Sum of a + b x p (a + b x min(p, cap) when cap > 0) over p = p0 .. p0+n-1."""
    if not cap:
        return _sum_affine(a, b, p0, n)
    return sum(_sum_affine(a + b * cap, 0.0, start, steps) if flat else _sum_affine(a, b, start, steps)
               for start, steps, flat in position_spans(cap, p0, n))


def _kernel_fraction(g: OpGroup, gpu: GPU) -> float:
    """The fraction of the datasheet peak a group's kernel reaches on this GPU's generation (0: not known); a kernel
    that accumulates in fp16 (accumulate16) at its fraction of the full-rate peak, which GeForce's fp16-accumulate
    speedup puts above the catalog's fp32-accumulate figure."""
    cc = gpu.compute_capability
    if cc:
        for major, fraction in g.peak_fractions:
            if major == cc[0]:
                return fraction * (gpu.fp16_accumulate_speedup if g.accumulate16 else 1.0)
    return 0.0


def group_rate(g: OpGroup, gpu: GPU, eff: Efficiency) -> tuple[float, bool]:
    """(FLOP/s before the GEMM shape, whether the GEMM shape then applies) of a group: for a kernel whose own rate is
    known on this GPU generation (fused attention) the datasheet peak x that fraction (no shape); else the matmul
    ceiling x runtime factor x kernel rate factor (x the fp16-accumulate speedup where the group accumulates in
    fp16). Integer ALU work (ALU_PATH) is counted in instructions measured on the runtime's own kernel, so the
    runtime's GEMM factor does not scale it again. The catalog sweep (planner.engine.sweep) reads it too."""
    fraction = _kernel_fraction(g, gpu) if g.peak_fractions else 0.0
    if fraction:
        return gpu.run_peak_tflops(g.compute_path) * FLOPS_PER_TFLOP * fraction, False
    factor = 1.0 if g.compute_path == ALU_PATH else g.ceiling_fraction or eff.compute_efficiency
    if g.accumulate16:  # fp16 accumulation: GeForce tensor cores run it at twice the catalog's fp32-accumulate rate
        factor *= gpu.fp16_accumulate_speedup
    return gpu.ceiling_tflops(g.compute_path) * FLOPS_PER_TFLOP * factor * g.rate_factor, True


def _flops_s_tiled(g: OpGroup, gpu: GPU, eff: Efficiency) -> tuple[float, bool]:
    """(achieved FLOP/s, whether its GEMMs run as tiles: gemm.tiled) of a group: group_rate x the GEMM shape's
    efficiency where the shape applies."""
    shape, is_tiled = gemm_shape(g.gemms, gpu.sm_count) if g.gemms else (1.0, False)
    rate, shaped = group_rate(g, gpu, eff)
    return rate * shape if shaped else rate, is_tiled


def _alu_seconds(g: OpGroup, gpu: GPU, eff: Efficiency) -> float:
    """Seconds per step of a pipelined quantized kernel's instructions folded into the group (OpGroup.alu), each at
    its path's rate as a group of its own would run them (_flops_s_tiled, unshaped)."""
    total = 0.0
    for path, flops in g.alu:
        rate = alu_rate(path, gpu, eff)
        total += flops / rate if rate else 0.0
    return total


def alu_rate(path: str, gpu: GPU, eff: Efficiency) -> float:
    """FLOP/s of a pipelined item's instructions on `path` (the runtime's GEMM factor only for a matmul path)."""
    return gpu.ceiling_tflops(path) * FLOPS_PER_TFLOP * (1.0 if path == ALU_PATH else eff.compute_efficiency)


def small_kernel_floor_s(g: OpGroup, gpu: GPU, eff: Efficiency) -> float:
    """Seconds per step a group's small kernels take at least (OpGroup.small_kernels x the runtime's kernels per
    fused kernel x SMALL_KERNEL_US); none on a CPU device, which runs no GPU kernel."""
    if not g.small_kernels or gpu.kind == "cpu":
        return 0.0
    return g.small_kernels * eff.kernels_per_layer_factor * SMALL_KERNEL_US * 1e-6


def group_bw_factor(g: OpGroup, gpu: GPU) -> float:
    """The fraction of the DRAM rate a group's bytes move at on this GPU: OpGroup.bw_factor, lowered where its
    kernel reads on fewer thread blocks than the GPU has SMs (OpGroup.grid_blocks; each block on one SM)."""
    if not g.grid_blocks or not gpu.sm_count or g.grid_blocks >= gpu.sm_count:
        return g.bw_factor
    return grid_rate_factor(g.bw_factor, g.grid_read, g.grid_blocks / gpu.sm_count)


def _terms(g: OpGroup, flops_s: float, bw: float, gpu: GPU, eff: Efficiency) -> tuple[float, float, float, float]:
    """Compute and memory seconds of one step as affine functions of p: (c0, c1, m0, m1). A pipelined quantized
    kernel's instructions (OpGroup.alu) are compute too, on the CUDA cores beside the tensor cores' multiply-adds
    (a GEMV's dot products are those instructions themselves): the compute side is the slower of the two. Small
    kernels take at least their minimum duration (small_kernel_floor_s): the memory side is at least that."""
    c0, c1 = (g.flops / flops_s, g.flops_per_pos / flops_s) if flops_s else (0.0, 0.0)
    if g.alu:
        c0 = max(c0, _alu_seconds(g, gpu, eff))
    bw = bw * group_bw_factor(g, gpu)  # a group whose kernels read slower than a stream (OpGroup.bw_factor)
    m0 = g.bytes / bw
    if g.small_kernels:
        m0 = max(m0, small_kernel_floor_s(g, gpu, eff))
    return c0, c1, m0, g.bytes_per_pos / bw


def _group_seconds(g: OpGroup, gpu: GPU, eff: Efficiency, p0: int, steps: int
                   ) -> tuple[float, float, tuple[float, float, float, float], bool, float, float]:
    """One op group over `steps` steps from position p0: (FLOP/s, bytes/s, its affine terms (c0, c1, m0, m1), whether
    compute and memory overlap, seconds, the compute-bound part of them)."""
    flops_s, is_tiled = _flops_s_tiled(g, gpu, eff)
    bw = gpu.mem_bw_gbps * BYTES_PER_GB * eff.mem_bw_efficiency
    c0, c1, m0, m1 = _terms(g, flops_s, bw, gpu, eff)
    # tiled GEMMs, the same every step, on a GPU: compute and memory overlap only in part (gemm.overlapped_seconds);
    # anything else takes the larger of the two, step by step
    overlap = is_tiled and not (g.flops_per_pos or g.bytes_per_pos) and gpu.kind != "cpu"
    if overlap:
        total = steps * overlapped_seconds(c0, m0)
        comp = total if c0 >= m0 else 0.0
    else:
        total, comp = _sum_terms((c0, c1, m0, m1), g.cap_pos, p0, steps)
    return flops_s, bw, (c0, c1, m0, m1), overlap, total, comp


def time_group(g: OpGroup, gpu: GPU, eff: Efficiency, p0: int, steps: int) -> GroupTime:
    flops_s, bw, (c0, c1, m0, m1), overlap, total, comp = _group_seconds(g, gpu, eff, p0, steps)
    ceiling = gpu.ceiling(g.compute_path)
    return GroupTime(g.name, g.formula, g.compute_path,
                     _sum_work(g.flops, g.flops_per_pos, g.cap_pos, p0, steps),
                     _sum_work(g.bytes, g.bytes_per_pos, g.cap_pos, p0, steps),
                     gpu.run_peak_tflops(g.compute_path), flops_s / FLOPS_PER_TFLOP,
                     bw * group_bw_factor(g, gpu) / BYTES_PER_GB,
                     _sum_work(c0, c1, g.cap_pos, p0, steps), _sum_work(m0, m1, g.cap_pos, p0, steps),
                     total, comp, ceiling.tflops, ceiling.how, shape_efficiency(g.gemms, gpu.sm_count),
                     _kernel_fraction(g, gpu), OVERLAP_EXPONENT if overlap else 0.0, ceiling.burst_tflops)


def step_host_seconds(ph: Phase, eff: Efficiency) -> float:
    """Serial CPU time per pass: the runtime's per-step host work and its engine generation's per sequence the
    step carries (Efficiency.step_host_seconds), once per step (or per prefill chunk)."""
    return (ph.host_rounds or ph.steps) * eff.step_host_seconds(ph.sequences)


def host_wait_seconds(ph: Phase, eff: Efficiency) -> float:
    """Serial host seconds per pass of the device-to-host round trips a step waits on (Phase.host_syncs: a quantized
    library's synchronize per call, a mixture of experts' torch.where per expert visited; the host waits for the GPU
    to drain, so nothing runs under them) and of an expert loop's operators on idle experts between two of them
    (Phase.idle_expert_ops), at the runtime's costs (Efficiency.sync_us, idle_op_us)."""
    if not ph.host_syncs:
        return 0.0
    return ph.steps * (ph.host_syncs * eff.sync_us + ph.idle_expert_ops * eff.idle_op_us) * 1e-6


def graphed_prefill(ph: Phase, eff: Efficiency) -> bool:
    """Whether a prefill step of `ph.tokens` tokens (all its sequences' together) is few enough for the runtime to
    replay as a CUDA graph (Efficiency.prefill_graph_max_tokens: llama.cpp's single-token steps, vLLM V1's
    max_cudagraph_capture_size); a limit of 0 graphs no prefill (vLLM V0), an unknown count (0) is not graphed."""
    return 0 < ph.tokens <= eff.prefill_graph_max_tokens


def eager_steps(ph: Phase, eff: Efficiency) -> int:
    """Steps of the phase an engine generation dispatches eagerly, kernel by kernel from the host: every step of a
    prefill phase where it runs its prefills eagerly (Efficiency.prefill_host_us_per_kernel: vLLM V0, llama.cpp,
    vLLM V1) unless the step is small enough to be graphed (graphed_prefill), and the decode steps at KV positions
    from Efficiency.eager_decode_from on (vLLM V0 replays its decode CUDA graphs only up to max_seq_len_to_capture
    tokens of context: positions p0 .. p0+steps-1, those p >= the limit)."""
    if not eff.prefill_host_us_per_kernel:
        return 0
    if ph.name == PREFILL:
        return 0 if graphed_prefill(ph, eff) else ph.steps
    start = eff.eager_decode_from
    return max(0, min(ph.steps, ph.p0 + ph.steps - start)) if start else 0


def _launch_host(ph: Phase, eff: Efficiency) -> tuple[float, float, float]:
    """(kernels per step, launch overhead per pass, host dispatch per pass). A quantized kernel library's own launches
    and host dispatches (Phase.launches, host_kernels) are counted as they are: the runtime's kernels-per-layer factor
    scales the model's fused-block kernels only. An engine generation's eager steps (eager_steps: vLLM V0's prefills,
    and its decode steps past the CUDA graphs' context) dispatch each kernel from Python as well. The pass's host
    time is set against its GPU time as a whole (pass_seconds), not step by step: a decode that crosses the limit
    part way hides some of its eager steps' host time under its graphed steps' GPU time (not modelled)."""
    fused = ph.kernels * eff.kernels_per_layer_factor
    kernels = fused + ph.launches
    host_us = ph.steps * eff.host_us_per_kernel + eager_steps(ph, eff) * eff.prefill_host_us_per_kernel
    return (kernels, ph.steps * kernels * eff.launch_overhead_us * 1e-6,
            (fused + ph.host_kernels) * host_us * 1e-6)


def kernel_latency_s(ph: Phase, gpu: GPU) -> float:
    """Seconds per pass of the phase's kernels' own fixed latencies (Phase.latency_s, each step); none on a CPU
    device, which runs no GPU kernel."""
    return ph.steps * ph.latency_s if ph.latency_s and gpu.kind != "cpu" else 0.0


def _comm_seconds(ph: Phase, gpu: GPU) -> float:
    """Collective seconds per pass over the GPUs' link (inf when the GPU has no link reaching comm_gpus): each kind of
    collective at NCCL's fastest protocol for its call size, or in the runtime's own all-reduce kernel."""
    if not ph.comm:
        return 0.0
    link = group_link(gpu, ph.comm_gpus, ph.comm_stride)
    return ph.steps * sum(c * t for c, _, _, t, _ in _protocol_picks(ph, link)) if link else float("inf")


def _protocol_picks(ph: Phase, link: Link) -> list[tuple[float, float, float, float, str]]:
    """Each kind of collective of a step as it runs: (calls, bytes sent per call, ring steps per call, seconds per
    call, how), NCCL's fastest protocol for the call's size (collectives.call_protocol), or over NVLink the runtime's
    own all-reduce kernel where it takes the message (Phase.custom_messages; collectives.custom_allreduce_seconds)."""
    picks = []
    custom = ph.custom_ar is not None and custom_link(link)
    for i, (sent, hops, calls) in enumerate(ph.comm):
        if not calls:
            continue
        message = ph.custom_messages[i] if custom else 0.0
        if message:
            seconds, kernel = custom_allreduce_seconds(ph.custom_ar, message, ph.comm_gpus, link)
            picks.append((calls, sent / calls, hops / calls, seconds, f"the runtime's {kernel.id} all-reduce of "
                          f"{message:,.0f} B"))
        else:
            seconds, protocol = call_protocol(sent / calls, hops / calls, link)
            picks.append((calls, sent / calls, hops / calls, seconds, PROTOCOL_NAMES[protocol.id]))
    return picks


def _protocol_words(picks: list[tuple[float, float, float, float, str]]) -> str:
    """Which NCCL protocol (or the runtime's own kernel) each kind of collective takes, in words ('' without
    collectives)."""
    return "; ".join(f"{calls:,.4g} x {sent:,.0f} B sent in {steps:g} ring step{'' if steps == 1 else 's'}: "
                     f"{how}, {seconds * 1e6:,.4g} us each"
                     for calls, sent, steps, seconds, how in picks)


# Compute kernels that run beside an NCCL collective are slower than alone: the collective's kernel holds SMs (one CTA
# per channel, up to 32 channels) and its copies take HBM bandwidth (each byte sent is written and read again, NCCL
# issue #1428). Lee et al., 'Characterizing Compute-Communication Overlap in GPU-Accelerated Distributed Deep
# Learning: Performance and Power Implications', arXiv 2507.03114 (2025-07-03, read 2026-11-27), abstract: GPT and
# LLaMA training on 4 x A100, H100, MI250 and MI210, the compute overlapped with communication 18.9 % slower on
# average (at most 40.0 %) than with none beside it. Measured, not fitted to this project's rows.
OVERLAP_COMPUTE_SLOWDOWN = 0.189
CONTENTION_ORIGIN = "Lee et al., arXiv 2507.03114 (2025): 4 x A100, H100, MI250, MI210, GPT and LLaMA training"


def hidden_comm(ph: Phase, eff: Efficiency, comm_s: float, compute_s: float) -> float:
    """Seconds of a pass's collectives that run under its compute: the runtime's overlap share of a data-parallel
    collective, at most the compute as it runs beside them (compute_s x (1 + OVERLAP_COMPUTE_SLOWDOWN)); none for
    tensor parallel (each layer waits for the last all-reduce) unless the runtime chunks it under its GEMMs: then,
    as for any phase with a share hidden under another phase's compute (Phase.comm_hidden), that share."""
    if ph.comm_hidden and math.isfinite(comm_s):
        return ph.comm_hidden * comm_s
    if not (ph.comm_overlaps and eff.dp_comm_overlap and math.isfinite(comm_s)):
        return 0.0
    return min(eff.dp_comm_overlap * comm_s, compute_s * (1 + OVERLAP_COMPUTE_SLOWDOWN))


def contention_seconds(hidden_s: float) -> float:
    """Seconds a collective hidden for hidden_s adds to the compute beside it: that compute runs
    1 + OVERLAP_COMPUTE_SLOWDOWN times slower, so the window does hidden_s / (1 + slowdown) of its work and the rest
    runs after it: hidden_s x slowdown / (1 + slowdown)."""
    return hidden_s * OVERLAP_COMPUTE_SLOWDOWN / (1 + OVERLAP_COMPUTE_SLOWDOWN)


def _phase_comm(ph: Phase, gpu: GPU) -> tuple[Link | None, list, float]:
    """(the link, each collective's protocol pick, collective seconds per pass) of a phase."""
    link = group_link(gpu, ph.comm_gpus, ph.comm_stride) if ph.comm else None
    picks = _protocol_picks(ph, link) if link else []  # the explanation and the time from one choice per collective
    comm = 0.0 if not ph.comm else ph.steps * sum(c * t for c, _, _, t, _ in picks) if link else float("inf")
    return link, picks, comm


def host_bound_seconds(host: float, gpu_s: float, synced: float) -> float:
    """Seconds per pass the GPU waits for the host: its dispatch beyond the GPU time that can run under it. Eager
    dispatch runs ahead of the GPU, so only the excess counts; after a device synchronize the host waits until the
    GPU has drained, so the GPU time of the groups it waits for every call (synced) runs under none of it and
    adds to it."""
    return max(0.0, host - (gpu_s - synced))


def synced_seconds(ph: Phase, times: Iterable[float]) -> float:
    """GPU seconds per pass of the phase's groups the host waits for every call (OpGroup.synced_fraction)."""
    return sum(t * g.synced_fraction for g, t in zip(ph.groups, times) if g.synced_fraction)


def time_phase(ph: Phase, gpu: GPU, eff: Efficiency) -> PhaseTime:
    groups = tuple(time_group(g, gpu, eff, ph.p0, ph.steps) for g in ph.groups)
    kernels, overhead, host = _launch_host(ph, eff)
    latency = kernel_latency_s(ph, gpu)
    link, picks, comm = _phase_comm(ph, gpu)
    hidden = hidden_comm(ph, eff, comm, sum(g.time_s for g in groups) + latency + overhead)
    return PhaseTime(ph.name, ph.steps, ph.passes, groups, kernels, overhead, comm - hidden, host,
                     step_host_seconds(ph, eff), hidden, f"{ph.comm_gpus} GPUs over {link.describe()}" if link else "",
                     ph.comm_calls, _protocol_words(picks), latency, contention_seconds(hidden),
                     synced_seconds(ph, (g.time_s for g in groups)), host_wait_seconds(ph, eff), ph.host_syncs,
                     ph.idle_expert_ops)


def phase_split(ph: Phase, gpu: GPU, eff: Efficiency) -> dict[str, float]:
    """time_phase(ph, gpu, eff).split(), the same sums in the same order, without building the explanation (the
    ranking's 'limited by' column asks it of every row)."""
    parts = [_group_seconds(g, gpu, eff, ph.p0, ph.steps)[4:] for g in ph.groups]
    groups_s = sum(total for total, _ in parts)
    cb = sum(comp for _, comp in parts)
    _, overhead, host = _launch_host(ph, eff)
    latency = kernel_latency_s(ph, gpu)
    comm = _phase_comm(ph, gpu)[2]
    gpu_s = groups_s + latency + overhead  # PhaseTime.gpu_s; also the compute a collective can hide under
    hidden = hidden_comm(ph, eff, comm, gpu_s)
    host_bound = host_bound_seconds(host, gpu_s, synced_seconds(ph, (total for total, _ in parts)))
    return {"compute": cb * ph.passes, "memory": (groups_s - cb) * ph.passes,
            "overhead": (overhead + latency + host_bound + step_host_seconds(ph, eff)
                         + host_wait_seconds(ph, eff)) * ph.passes,
            "communication": (comm - hidden + contention_seconds(hidden)) * ph.passes}


def phase_seconds(ph: Phase, gpu: GPU, eff: Efficiency) -> float:
    """time_phase(...).total_s without building the explanation (used by the batch search and the catalog sweep)."""
    return pass_seconds(ph, gpu, eff) * ph.passes


def pass_seconds(ph: Phase, gpu: GPU, eff: Efficiency) -> float:
    """Seconds of one pass of the phase (phase_seconds is this x its passes): the same for a job of any size."""
    total = synced = 0.0
    bw = gpu.mem_bw_gbps * BYTES_PER_GB * eff.mem_bw_efficiency
    steps, p0 = ph.steps, ph.p0
    on_gpu = gpu.kind != "cpu"
    for g in ph.groups:
        # elementwise groups: bytes only
        flops_s, is_tiled = _flops_s_tiled(g, gpu, eff) if g.flops or g.flops_per_pos else (0.0, False)
        if g.flops_per_pos or g.bytes_per_pos:
            t = _sum_terms(_terms(g, flops_s, bw, gpu, eff), g.cap_pos, p0, steps)[0]
        else:  # position-independent: every step costs the same
            compute, memory = g.flops / flops_s if flops_s else 0.0, g.bytes / (bw * group_bw_factor(g, gpu))
            if g.alu:  # _terms' rule
                compute = max(compute, _alu_seconds(g, gpu, eff))
            if g.small_kernels:  # _terms' rule
                memory = max(memory, small_kernel_floor_s(g, gpu, eff))
            if is_tiled and on_gpu:  # time_group's rule
                t = steps * overlapped_seconds(compute, memory)
            else:
                t = steps * (compute if compute > memory else memory)
        total += t
        share = g.synced_fraction  # synced_seconds' rule
        if share:
            synced += t * share
    _, overhead, host = _launch_host(ph, eff)
    busy = total + overhead + (kernel_latency_s(ph, gpu) if ph.latency_s else 0.0)  # most phases have none
    serial = step_host_seconds(ph, eff) if eff.step_host_us or eff.host_us_per_seq else 0.0
    serial += host_wait_seconds(ph, eff) if ph.host_syncs else 0.0
    seconds = busy + (host_bound_seconds(host, busy, synced) if synced else max(0.0, host - busy)) + serial
    if ph.comm:
        comm = _comm_seconds(ph, gpu)
        hidden = hidden_comm(ph, eff, comm, busy)
        seconds += comm - hidden + contention_seconds(hidden)
    return seconds


def ridge_point(gpu: GPU, path: str, eff: Efficiency | None = None) -> float | None:
    """Arithmetic intensity (FLOP/byte) where the compute roof meets the bandwidth roof: the datasheet roofs, or with
    `eff` the achieved ones (matmul ceiling x runtime factor, a large GEMM's shape)."""
    peak = gpu.run_peak_tflops(path)
    if not peak:
        return None
    if eff is None:
        return peak * FLOPS_PER_TFLOP / (gpu.mem_bw_gbps * BYTES_PER_GB)
    return (gpu.ceiling_tflops(path) * FLOPS_PER_TFLOP * eff.compute_efficiency
            / (gpu.mem_bw_gbps * BYTES_PER_GB * eff.mem_bw_efficiency))


def attainable_tflops(gpu: GPU, path: str, intensity: float) -> float:
    """Datasheet roofline: min(peak, intensity x bandwidth), in TFLOPS."""
    peak = gpu.run_peak_tflops(path)
    return min(peak, intensity * gpu.mem_bw_gbps * BYTES_PER_GB / FLOPS_PER_TFLOP)
