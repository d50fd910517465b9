"""The catalog sweep's arithmetic: one pass's seconds on every (GPU, batch) of a plan at once, with numpy.

A pass's work (phases.job_passes: the model's op groups) depends on its batch b. Above the batch where a quantized
GEMV stops taking the pass (Setup.quantized_gemv), a dense model's work is affine in b: every group's FLOPs and
bytes (and their per-position terms, a pipelined kernel's instructions, a library's launches, a step's kernel
latency) is a + c x b, and every GEMM's rows are m0 + m1 x b with its N, K and count fixed. `affine_work` reads
those coefficients off the model's own work at two batches (the object path, so a change to a model's formulas
flows into both) and checks them at a third; `pass_table` then times every (GPU, batch) as roofline.pass_seconds
does, the non-linear pieces evaluated on arrays: the GEMM tile and wave staircases (gemm.gemm_efficiency's ceilings),
compute against memory per group, the decode positions' closed form (roofline.sum_max_affine), the overlap of tiled
GEMMs (gemm.overlapped_seconds), the host against the GPU. The object path stays the explanation (Explain, JSON):
tests/engine/test_sweep_equality.py keeps the two equal (relative 1e-9) on generated plans.

The catalog's devices are columns (`Columns`, built once per plan shape and list of devices): a sweep sizes
batch=auto for all of them at once (`auto_batches`), times each one's full passes and its rest in one table per
group of works (`timed_passes`) and prices every tier (`job_costs_usd`).

What this path does not cover, each timed by the object path instead (`uncovered`, `affine_work`):
- a calibration (a function the sweep cannot key on), training jobs (micro-steps and optimizer steps, their
  collectives), a job kind this does not know;
- a mixture of experts (active parameters < parameters): the experts a pass reads grow as 1 - (1 - k/E)^tokens
  and their GEMM rows as a staircase in the batch, not affine;
- a pass with collectives (tensor parallel: NCCL's protocol is picked per call size);
- a pass at or below the batch where a quantized GEMV (or anything else) changes the work's shape: batches up to
  AFFINE_FROM, Setup.gemv_tokens or Setup.prompt_path_switch_tokens (the prompt GEMM's small-pass path),
  whichever is largest;
- a pass whose work the probes find not affine (a group's figure off the line by more than AFFINE_TOLERANCE, or a
  structure that differs between the probes): named in AffineWork.refused.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from planner.base.units import BYTES_PER_GB, SECONDS_PER_HOUR
from planner.engine.gemm import MMA_ROWS, OVERLAP_EXPONENT, TILE_K, TILE_M, TILE_N
from planner.engine.phases import PREFILL, Phase, job_passes
from planner.engine.roofline import alu_rate, capped_sum, group_rate, kernel_latency_s, step_host_seconds
from planner.inputs.catalog import GPU
from planner.inputs.jobs import Generate, Infer, Train, Workload
from planner.inputs.models import ModelProfile
from planner.inputs.runtimes import Efficiency
from planner.inputs.work import SMALL_KERNEL_US, OpGroup, Setup, grid_rate_factor

AFFINE_FROM = 16  # the smallest batch timed here: smaller passes are few per sweep, and a GEMV's regime lives there
PROBE_STEPS = (1, 1 + 1024, 1 + 3 * 1024)  # probes above the floor: two to read the line, one to check it
AFFINE_TOLERANCE = 1e-11  # relative: a figure further off the line than this is not affine in the batch
# per group, a + c x b; grid_blocks: a decode kernel's thread blocks without a split along the keys (OpGroup)
GROUP_FIELDS = ("flops", "bytes", "flops_per_pos", "bytes_per_pos", "grid_blocks")
PHASE_FIELDS = ("launches", "host_kernels", "latency_s")  # per phase, a + c x b
_TINY = float(np.finfo(np.float64).tiny)  # a divisor for 0 / 0 = 0 where a figure is masked or both terms are 0
# one step of 1 s of kernel latency: roofline.kernel_latency_s of it is 1 where a device counts its kernels' latencies
_ONE_LATENCY = Phase("latency", (), 0.0, 1, 0, 1.0, latency_s=1.0)


class AffineGroup(NamedTuple):
    """One op group as a function of the batch: `group` is the probe's (its fixed fields: path, rate factor, peak
    fractions, cap, alu paths); lines[f] = (a, c) for f in GROUP_FIELDS; alu = ((a, c), ...) per alu item;
    gemms = ((m0, m1, N, K, count), ...)."""

    group: OpGroup
    lines: tuple[tuple[float, float], ...]
    alu: tuple[tuple[float, float], ...]
    gemms: tuple[tuple[int, int, int, int, float], ...]


class AffinePhase(NamedTuple):
    phase: Phase  # the probe's phase: steps, p0, kernels, host_rounds are the same at every batch
    groups: tuple[AffineGroup, ...]
    lines: tuple[tuple[float, float], ...]  # PHASE_FIELDS


class Flat(NamedTuple):
    """A pass's groups (every phase's, G in all) and their GEMMs (NG) as columns, in pass_table's shapes: a group's
    figure at batch b is lines[2i] + lines[2i+1] x b for GROUP_FIELDS[i]."""

    lines: np.ndarray  # (8, G, 1)
    steps: np.ndarray  # (G, 1): its phase's steps per pass
    p0: np.ndarray  # (G, 1): its phase's first position
    has_flops: np.ndarray  # (G, 1) bool: FLOPs at some position (else no rate is asked: roofline.pass_seconds)
    positional: np.ndarray  # (G,) indices of the groups whose work grows with the position
    pos_lines: np.ndarray  # (4, npos, 1): a and c of flops_per_pos and bytes_per_pos of those groups
    pos_p0: np.ndarray  # (npos, 1)
    pos_steps: np.ndarray  # (npos, 1)
    capped: tuple[tuple[int, int, int], ...]  # (place among the positional, group, cap) of each capped group
    all_flops: bool  # every group has FLOPs
    gemm_lines: np.ndarray  # (2, NG, 1): rows m0 + m1 x b
    gemm_cols: np.ndarray  # (NG, 1): column tiles, ceil(N / TILE_N)
    gemm_k_steps: np.ndarray  # (NG, 1): K // TILE_K
    gemm_size: np.ndarray  # (NG, 1): N x K x count
    gemm_padded_size: np.ndarray  # (NG, 1): column tiles x TILE_N x K x count
    gemm_of: np.ndarray  # (G, NG): 1 where the GEMM is the group's
    has_gemms: np.ndarray  # (G, 1) bool
    alu_lines: np.ndarray  # (2, NA, 1): a pipelined kernel's instructions per item
    alu_of: np.ndarray  # (G, NA)
    has_alu: np.ndarray  # (G, 1) bool
    phase_of: np.ndarray  # (P, G): 1 where the group is the phase's
    phase_steps: np.ndarray  # (P, 1)
    phase_kernels: np.ndarray  # (P, 1): fused-block kernels per step
    phase_lines: np.ndarray  # (6, P, 1): a and c of PHASE_FIELDS
    small_kernels: np.ndarray  # (G, 1): OpGroup.small_kernels (the same at every batch)
    bw_factor: np.ndarray  # (G, 1): OpGroup.bw_factor (the same at every batch)
    grid_read: np.ndarray  # (G, 1): OpGroup.grid_read (the same at every batch)
    key: tuple = ()  # what two works must share to be timed in one table (their figures may differ): _stacked


class AffineWork(NamedTuple):
    """One pass's phases as functions of the batch, valid for batches > floor; refused: why not ('' = covered)."""

    phases: tuple[AffinePhase, ...]
    floor: int
    refused: str
    flat: Flat | None = None


def _column(values) -> np.ndarray:
    return np.array(values, dtype=np.float64).reshape(-1, 1)


def _flat(phases: tuple[AffinePhase, ...]) -> Flat:
    groups = [(i, ap.phase, ag) for i, ap in enumerate(phases) for ag in ap.groups]
    gemms = [(j, gm) for j, (_, _, ag) in enumerate(groups) for gm in ag.gemms]
    alu = [(j, line) for j, (_, _, ag) in enumerate(groups) for line in ag.alu]
    n_groups = len(groups)
    lines = np.array([[ag.lines[f][ac] for _, _, ag in groups] for f in range(len(GROUP_FIELDS)) for ac in (0, 1)],
                     dtype=np.float64).reshape(2 * len(GROUP_FIELDS), n_groups, 1)
    positional = [j for j, (_, _, ag) in enumerate(groups) if any(ag.lines[2]) or any(ag.lines[3])]
    gemm_of = np.zeros((n_groups, len(gemms)))
    for col, (j, _) in enumerate(gemms):
        gemm_of[j, col] = 1.0
    alu_of = np.zeros((n_groups, len(alu)))
    for col, (j, _) in enumerate(alu):
        alu_of[j, col] = 1.0
    phase_of = np.zeros((len(phases), n_groups))
    for j, (i, _, _) in enumerate(groups):
        phase_of[i, j] = 1.0
    has_flops = [any(ag.lines[0]) or any(ag.lines[2]) for _, _, ag in groups]
    cols = [-(-gm[2] // TILE_N) for _, gm in gemms]
    return Flat(
        lines, _column([ph.steps for _, ph, _ in groups]), _column([ph.p0 for _, ph, _ in groups]),
        np.array(has_flops, dtype=bool).reshape(-1, 1), np.array(positional, dtype=np.intp),
        lines[4:8][:, positional], _column([groups[j][1].p0 for j in positional]),
        _column([groups[j][1].steps for j in positional]),
        tuple((i, j, groups[j][2].group.cap_pos) for i, j in enumerate(positional) if groups[j][2].group.cap_pos),
        all(has_flops),
        np.array([[[gm[0]] for _, gm in gemms], [[gm[1]] for _, gm in gemms]], dtype=np.float64).reshape(2, -1, 1),
        _column(cols), _column([gm[3] // TILE_K for _, gm in gemms]),
        _column([float(gm[2]) * gm[3] * gm[4] for _, gm in gemms]),
        _column([float(c * TILE_N) * gm[3] * gm[4] for c, (_, gm) in zip(cols, gemms)]),
        gemm_of, gemm_of.any(axis=1).reshape(-1, 1),
        np.array([[[a] for _, (a, _) in alu], [[c] for _, (_, c) in alu]], dtype=np.float64).reshape(2, -1, 1),
        alu_of, alu_of.any(axis=1).reshape(-1, 1), phase_of, _column([ap.phase.steps for ap in phases]),
        _column([ap.phase.kernels for ap in phases]),
        np.array([ap.lines[f][ac] for f in range(len(PHASE_FIELDS)) for ac in (0, 1) for ap in phases],
                 dtype=np.float64).reshape(2 * len(PHASE_FIELDS), len(phases), 1),
        _column([ag.group.small_kernels for _, _, ag in groups]),
        _column([ag.group.bw_factor for _, _, ag in groups]),
        _column([ag.group.grid_read for _, _, ag in groups]),
        (tuple(i for i, _, _ in groups), tuple(j for j, _ in gemms), tuple(j for j, _ in alu), tuple(has_flops),
         tuple(positional), tuple((ap.phase.steps, ap.phase.p0) for ap in phases),
         tuple(ag.group.cap_pos for _, _, ag in groups)))


# Flat's figures that differ between works of one key (along their last axis)
_PER_WORK = ("lines", "pos_lines", "gemm_lines", "gemm_cols", "gemm_k_steps", "gemm_size", "gemm_padded_size",
             "alu_lines", "phase_kernels", "phase_lines", "small_kernels", "bw_factor",
             "grid_read")


def _stacked(works: list[AffineWork], which: np.ndarray) -> Flat:
    """One Flat for rows of several works sharing a key: each figure of _PER_WORK taken per row from its work
    (`which`: each row's index into `works`)."""
    flats = [w.flat for w in works]
    return flats[0]._replace(**{name: np.concatenate([getattr(f, name) for f in flats], axis=-1)[..., which]
                                for name in _PER_WORK})


def uncovered(m: ModelProfile, w: Workload) -> str:
    """Why a plan of model `m` and job `w` is not timed here at all ('' = it is, pass by pass: affine_work)."""
    if isinstance(w, Train):
        return "a training job (micro-steps, optimizer steps and their collectives)"
    if not isinstance(w, (Generate, Infer)):
        return "a job kind the sweep does not know"
    if m.active_params != m.params:
        return ("a mixture of experts: the experts a pass reads grow as 1 - (1 - k/E)^tokens and their GEMM rows as a "
                "staircase in the batch")
    return ""


def _line(y1: float, y2: float, b1: int, b2: int) -> tuple[float, float]:
    c = (y2 - y1) / (b2 - b1)
    return y1 - c * b1, c


def _off(line: tuple[float, float], b: int, y: float) -> bool:
    a, c = line
    return abs(a + c * b - y) > AFFINE_TOLERANCE * max(abs(y), abs(a), abs(c * b), 1e-300)


def _field_lines(probes: tuple, names: tuple[str, ...], b: tuple[int, int, int]) -> tuple | str:
    """Each named field's line (a, c) through the first two probes, or the name of the first field the third probe
    is off."""
    lines = []
    for f in names:
        y1, y2, y3 = (getattr(x, f) for x in probes)
        line = _line(y1, y2, b[0], b[1])
        if _off(line, b[2], y3):
            return f
        lines.append(line)
    return tuple(lines)


def _fixed_fields(g: OpGroup) -> tuple:
    """A group's fields that must not change with the batch for its lines to hold."""
    return (g.name, g.compute_path, g.rate_factor, g.peak_fractions, g.cap_pos, g.small_kernels, g.accumulate16,
            g.bw_factor, g.grid_read)


def _affine_group(g1: OpGroup, g2: OpGroup, g3: OpGroup, b: tuple[int, int, int]) -> AffineGroup | str:
    """The group's lines from three probes, or why it is not affine."""
    if _fixed_fields(g1) != _fixed_fields(g3) or _fixed_fields(g2) != _fixed_fields(g1):
        return f"its groups differ between batches {b[0]} and {b[2]}"
    if [p for p, _ in g1.alu] != [p for p, _ in g2.alu] or [p for p, _ in g1.alu] != [p for p, _ in g3.alu]:
        return f"{g1.name}: its pipelined instructions differ between batches"
    if len(g1.gemms) != len(g2.gemms) or len(g1.gemms) != len(g3.gemms):
        return f"{g1.name}: its GEMMs differ between batches"
    lines = _field_lines((g1, g2, g3), GROUP_FIELDS, b)
    if isinstance(lines, str):
        return f"{g1.name}: {lines} is not affine in the batch"
    alu = []
    for (_, y1), (_, y2), (_, y3) in zip(g1.alu, g2.alu, g3.alu):
        line = _line(y1, y2, b[0], b[1])
        if _off(line, b[2], y3):
            return f"{g1.name}: its pipelined instructions are not affine in the batch"
        alu.append(line)
    gemms = []
    for (m1, n1, k1, c1), (m2, n2, k2, c2), (m3, n3, k3, c3) in zip(g1.gemms, g2.gemms, g3.gemms):
        slope, left = divmod(m2 - m1, b[1] - b[0])
        if left or (n1, k1, c1) != (n2, k2, c2) or (n1, k1, c1) != (n3, k3, c3) \
                or m1 - slope * b[0] + slope * b[2] != m3:
            return f"{g1.name}: a GEMM's rows are not affine in the batch"
        gemms.append((m1 - slope * b[0], slope, n1, k1, c1))
    return AffineGroup(g1, lines, tuple(alu), tuple(gemms))


def _affine_phase(p1: Phase, p2: Phase, p3: Phase, b: tuple[int, int, int]) -> AffinePhase | str:
    if p1.comm or p3.comm:
        return f"{p1.name}: collectives (NCCL's protocol is picked per call size)"
    if any(g.synced_fraction for g in p1.groups):
        return f"{p1.name}: the host waits for a group's kernels every call (a device synchronize)"
    if (p1.name, p1.kernels, p1.steps, p1.p0, p1.host_rounds, len(p1.groups)) != \
            (p3.name, p3.kernels, p3.steps, p3.p0, p3.host_rounds, len(p3.groups)) or len(p2.groups) != len(p1.groups):
        return f"{p1.name}: its steps or groups differ between batches"
    groups = []
    for g1, g2, g3 in zip(p1.groups, p2.groups, p3.groups):
        g = _affine_group(g1, g2, g3, b)
        if isinstance(g, str):
            return f"{p1.name}: {g}"
        groups.append(g)
    lines = _field_lines((p1, p2, p3), PHASE_FIELDS, b)
    if isinstance(lines, str):
        return f"{p1.name}: {lines} is not affine in the batch"
    return AffinePhase(p1, tuple(groups), lines)


@lru_cache(maxsize=1024)
def affine_work(m: ModelProfile, w: Workload, s: Setup, n_gpus: int) -> AffineWork:
    """One pass of job `w` (its shape: the size plays no part) as functions of the batch, from the model's own work
    at three batches above the floor (phases.job_passes, one full pass of each)."""
    floor = max(AFFINE_FROM, s.gemv_tokens, s.prompt_path_switch_tokens)
    b = tuple(floor + k for k in PROBE_STEPS)
    probes = [tuple(ph for ph, _ in job_passes(m, w, s, x, x, n_gpus)) for x in b]
    if len({len(p) for p in probes}) != 1:
        return AffineWork((), floor, "its phases differ between batches")
    phases = []
    for p1, p2, p3 in zip(*probes):
        ph = _affine_phase(p1, p2, p3, b)
        if isinstance(ph, str):
            return AffineWork((), floor, ph)
        phases.append(ph)
    return AffineWork(tuple(phases), floor, "", _flat(tuple(phases)))


def gpu_constants(work: AffineWork, gpu: GPU, eff: Efficiency) -> np.ndarray:
    """What pass_table needs of one GPU under one runtime for `work`, flat: bytes/s, on a GPU (1/0), SMs, the
    runtime's kernels per fused kernel, launch and host seconds per kernel, whether kernels' own latencies count
    (roofline.kernel_latency_s); per phase its serial host seconds per pass (roofline.step_host_seconds); per group
    its FLOP/s before the GEMM shape (roofline.group_rate), then per group whether the shape applies (0:
    no GEMMs, no SM count, or a kernel whose own rate on this generation is known); each pipelined item's FLOP/s. A
    rate of 0 (no such path here) is written as infinite: pass_table then charges its work 0 s, as roofline does.
    Per phase also its eager host seconds per kernel (Efficiency.prefill_host_us_per_kernel in prefill phases:
    roofline.eager_steps) and the smallest batch it applies at (_first_eager_batch). An engine generation's host
    work per sequence or eager decode steps (Efficiency.host_us_per_seq, eager_decode_from: only validation rows that
    name vLLM V0 set them; they are timed pass by pass) is not among these terms: ValueError."""
    if eff.host_us_per_seq or eff.eager_decode_from:
        raise ValueError("the sweep has no term for an engine generation's host work per sequence or eager "
                         "decode: time it pass by pass (estimate_gpu)")
    out = [gpu.mem_bw_gbps * BYTES_PER_GB * eff.mem_bw_efficiency, float(gpu.kind != "cpu"), float(gpu.sm_count),
           eff.kernels_per_layer_factor, eff.launch_overhead_us * 1e-6, eff.host_us_per_kernel * 1e-6,
           kernel_latency_s(_ONE_LATENCY, gpu)]
    out += [step_host_seconds(ap.phase, eff) if eff.step_host_us else 0.0 for ap in work.phases]
    out += [eff.prefill_host_us_per_kernel * 1e-6 if ap.phase.name == PREFILL else 0.0 for ap in work.phases]
    out += [_first_eager_batch(ap.phase, eff) for ap in work.phases]
    shaped, alu = [], []
    for ap in work.phases:
        for ag in ap.groups:
            rate, by_shape = group_rate(ag.group, gpu, eff)
            out.append(rate)
            shaped.append(1.0 if by_shape and ag.gemms and gpu.sm_count > 0 else 0.0)
            alu += [alu_rate(path, gpu, eff) for path, _ in ag.group.alu]
    return np.array([r if i < 7 + 3 * len(work.phases) or r else math.inf for i, r in enumerate(out)] + shaped
                    + [r or math.inf for r in alu])


def _first_eager_batch(ph: Phase, eff: Efficiency) -> float:
    """The smallest batch at which a prefill phase's step is dispatched eagerly (roofline.graphed_prefill: a runtime
    that replays steps of up to prefill_graph_max_tokens tokens as a graph; the phase's step holds ph.tokens /
    ph.sequences tokens a sequence); 1 where every batch is."""
    if ph.name != PREFILL or not ph.tokens or not ph.sequences:
        return 1.0
    return float(eff.prefill_graph_max_tokens // (ph.tokens // ph.sequences) + 1)


def _quantized(m: np.ndarray, cols: np.ndarray, k_steps: np.ndarray, sms: np.ndarray, safe: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """gemm.gemm_efficiency's tiles on arrays (broadcast): (rows padded to whole tiles, work units (tiles x split-K
    slices), the SM slots of the waves they take), for rows `m`, column tiles `cols`, K steps `k_steps` (K //
    TILE_K), SMs `sms` (`safe`: at least 1)."""
    tm = np.minimum(np.maximum(np.ldexp(1.0, np.frexp(np.maximum(m, 1.0) - 1.0)[1]), MMA_ROWS), TILE_M)
    rows = np.ceil(m / tm)
    tiles = rows * cols
    slices = np.where(tiles < sms, np.maximum(1.0, np.minimum(np.floor(safe / tiles), k_steps)), 1.0)
    units = tiles * slices
    return rows * tm, units, np.ceil(units / safe) * safe


def gemm_efficiency(m: np.ndarray, n: np.ndarray, k: np.ndarray, sms: np.ndarray) -> np.ndarray:
    """gemm.gemm_efficiency on arrays (broadcast) of rows `m`, N, K and SM counts `sms` (float64, whole numbers)."""
    cols = np.ceil(n / TILE_N)
    padded, units, slots = _quantized(m, cols, np.floor(k / TILE_K), sms, np.maximum(sms, 1.0))
    return np.where(sms > 0, m * n * units / (padded * cols * TILE_N * slots), 1.0)


def _sum_affine(a, b, p0, n):
    return n * a + b * (n * p0 + n * (n - 1) / 2)


def sum_max_affine(c0, c1, m0, m1, p0, n) -> tuple[np.ndarray, np.ndarray]:
    """roofline.sum_max_affine on arrays (broadcast; n >= 1): (total, the compute-bound part)."""
    d0, d1 = c0 - m0, c1 - m1
    first, last = d0 + d1 * p0, d0 + d1 * (p0 + n - 1)
    span = n * p0 + n * (n - 1) / 2  # _sum_affine's, once for both sums
    comp_all, mem_all = n * c0 + c1 * span, n * m0 + m1 * span
    lead = first >= 0
    mixed = lead != (last >= 0)
    if not mixed.any():
        return np.where(lead, comp_all, mem_all), np.where(lead, comp_all, 0.0)
    cross = -d0 / np.where(mixed, d1, 1.0)
    up = d1 > 0
    k = np.where(up, np.ceil(cross) - p0, np.floor(cross) - p0 + 1)
    k = np.where(mixed, np.clip(k, 0, n), 0.0)
    head_c, tail_c = _sum_affine(c0, c1, p0, k), _sum_affine(c0, c1, p0 + k, n - k)
    head_m, tail_m = _sum_affine(m0, m1, p0, k), _sum_affine(m0, m1, p0 + k, n - k)
    total = np.where(mixed, np.where(up, head_m + tail_c, tail_m + head_c), np.where(first >= 0, comp_all, mem_all))
    comp = np.where(mixed, np.where(up, tail_c, head_c), np.where(first >= 0, comp_all, 0.0))
    return total, comp


def _sum_capped(c0, c1, m0, m1, cap: int, p0: int, n: int):
    """roofline.capped_sum of one group capped at position `cap` on arrays (rows: the GPUs and batches)."""
    return capped_sum((c0, c1, m0, m1), cap, p0, n, sum_max_affine)


def overlapped_seconds(c: np.ndarray, m: np.ndarray) -> np.ndarray:
    """gemm.overlapped_seconds on arrays."""
    big, small = np.maximum(c, m), np.minimum(c, m)
    ratio = small / np.maximum(big, _TINY)
    return np.where(small <= 0.0, big, big * (1.0 + ratio ** OVERLAP_EXPONENT) ** (1.0 / OVERLAP_EXPONENT))


def pass_table(works: list[AffineWork], which: list[int], batches: list[int], consts: list[np.ndarray]
               ) -> tuple[list, list]:
    """(seconds of one pass of each phase, rows x P; its split, rows x P x 4 in roofline.LIMITS' order) for each row:
    batch batches[i] of works[which[i]] (works of one Flat.key) on the GPU whose gpu_constants are consts[i]
    (roofline.pass_seconds and phase_split), as lists (flat_pass_arrays: as arrays)."""
    fl = works[0].flat if len(works) == 1 else _stacked(works, np.array(which))
    seconds, split = flat_pass_arrays(fl, batches, consts)
    return seconds.tolist(), split.tolist()


def flat_pass_arrays(fl: Flat, batches, consts) -> tuple[np.ndarray, np.ndarray]:
    """pass_table's figures as arrays (rows x P, rows x P x 4) for the rows of `fl` (one work's, or works' stacked
    per row: _stacked); `consts` a list of gpu_constants or their rows x C array.
    A FLOP rate of 0 (no such path on the GPU, or a group without FLOPs) is infinite here: its compute takes 0 s, as
    roofline's 'if flops_s else 0.0' has it."""
    n_phases, n_groups = fl.phase_of.shape
    b = np.array(batches, dtype=np.float64).reshape(1, -1)
    c = np.array(consts, dtype=np.float64).T  # (columns, rows)
    bw, on_gpu, sms, kpl, launch_s, host_s, latency_on = c[:7]
    step_host, eager_s, eager_from = c[7:7 + n_phases], c[7 + n_phases:7 + 2 * n_phases], c[7 + 2 * n_phases:
                                                                                            7 + 3 * n_phases]
    eager_s = np.where(b >= eager_from, eager_s, 0.0)  # a prompt few enough tokens to be graphed: none
    first = 7 + 3 * n_phases  # the groups' rates
    rate = c[first:first + n_groups]
    flops, nbytes = fl.lines[0:4:2] + fl.lines[1:4:2] * b  # a + c x b of both at once
    if fl.gemm_of.shape[1]:
        shaped = c[first + n_groups:first + 2 * n_groups] > 0
        m = fl.gemm_lines[0] + fl.gemm_lines[1] * b
        padded, units, slots = _quantized(m, fl.gemm_cols, fl.gemm_k_steps, sms, np.maximum(sms, 1.0))
        # each GEMM's FLOPs / its efficiency: m n k count x padded cols TILE_N slots / (m n units); where a group's
        # shape does not apply (no GEMMs, no SM count, a kernel's own rate) the figure is masked
        work_g = fl.gemm_of @ (m * fl.gemm_size)
        time_g = fl.gemm_of @ (padded * fl.gemm_padded_size * slots / units)
        rate = rate * np.where(shaped, work_g / np.maximum(time_g, _TINY), 1.0)
        tiled = ((fl.gemm_of @ (m >= MMA_ROWS)) > 0) & (on_gpu > 0)
        if not fl.all_flops:
            tiled &= fl.has_flops
    else:
        tiled = np.zeros(rate.shape, dtype=bool)
    if not fl.all_flops:
        rate = np.where(fl.has_flops, rate, np.inf)
    # a kernel on fewer thread blocks than SMs reads at their share (roofline.group_bw_factor)
    bwf = fl.bw_factor
    if fl.grid_read.any():
        blocks = fl.lines[8] + fl.lines[9] * b
        few = (blocks > 0) & (blocks < sms)
        bwf = np.where(few, grid_rate_factor(fl.bw_factor, fl.grid_read,
                                             np.where(few, blocks, 1.0) / np.maximum(sms, 1.0)), fl.bw_factor)
    c0, m0 = flops / rate, nbytes / (bw * bwf)
    # small kernels at their minimum duration (roofline.small_kernel_floor_s): on a GPU, at least this memory side
    m0 = np.maximum(m0, fl.small_kernels * kpl * (SMALL_KERNEL_US * 1e-6) * on_gpu)
    if fl.alu_of.shape[1]:
        alu = c[first + 2 * n_groups:]
        alu_s = fl.alu_of @ ((fl.alu_lines[0] + fl.alu_lines[1] * b) / alu)
        c0 = np.where(fl.has_alu, np.maximum(c0, alu_s), c0)
    # position-independent groups: every step the same, tiled GEMMs overlapping in part
    total = np.where(tiled, overlapped_seconds(c0, m0), np.maximum(c0, m0)) * fl.steps
    comp = np.where(c0 >= m0, total, 0.0)
    pos = fl.positional
    if pos.size:
        PL = fl.pos_lines
        fpp, bpp = PL[0::2] + PL[1::2] * b
        c1, m1 = fpp / rate[pos], bpp / (bw * bwf[pos])
        t, cb = sum_max_affine(c0[pos], c1, m0[pos], m1, fl.pos_p0, fl.pos_steps)
        for i, j, cap in fl.capped:
            t[i], cb[i] = _sum_capped(c0[j], c1[i], m0[j], m1[i], cap, int(fl.p0[j, 0]), int(fl.steps[j, 0]))
        total[pos], comp[pos] = t, cb
    groups_s, comp_s = fl.phase_of @ total, fl.phase_of @ comp
    launches, host_kernels, latency = fl.phase_lines[0::2] + fl.phase_lines[1::2] * b
    fused = fl.phase_kernels * kpl
    overhead = fl.phase_steps * (fused + launches) * launch_s
    host = fl.phase_steps * (fused + host_kernels) * (host_s + eager_s)
    latency_s = fl.phase_steps * latency * latency_on
    busy = groups_s + overhead + latency_s
    seconds = np.maximum(busy, host) + step_host
    split = np.empty((b.shape[1], n_phases, 4))
    split[:, :, 0], split[:, :, 1] = comp_s.T, (groups_s - comp_s).T
    split[:, :, 2] = (overhead + latency_s + np.maximum(0.0, host - busy) + step_host).T
    split[:, :, 3] = 0.0
    return seconds.T, split


class Columns(NamedTuple):
    """A sweep's devices (one plan shape, a list of GPUs) as columns, built once (columns): what the job's size then
    reads of each, and its pass's terms grouped by Flat.key, one flat_pass_arrays call per group."""

    ranks: tuple[int, ...]  # the distinct data-parallel rank counts
    rank_of: np.ndarray  # (n,) each device's index into ranks
    fits: np.ndarray  # (n,) int64: the largest batch its memory holds (estimate._Fixed.fits)
    floors: np.ndarray  # (n,) int64: batches above this are timed here (NEVER: a blocked or refused device's)
    groups: tuple  # per Flat.key: (the members' works as one Flat, whether stacked per row (_stacked), the
    # members' indices, their gpu_constants); rows: the members at their batch, then at the rest's
    prices: dict  # {ids of price mappings: (the mappings, $/h per tier x device, NaN for none)} (usd_per_hour)


NEVER = np.iinfo(np.int64).max  # a floor no batch passes
PRICE_TABLES_KEPT = 8  # price tables whose $/h columns a Columns keeps (live refreshes make new ones)


def columns(n_dp: list[int], fits: list[int], terms: list[tuple[AffineWork, np.ndarray] | None]) -> Columns:
    """Columns of devices with these data-parallel ranks, memory limits and (work, gpu_constants) terms (None: a
    device whose passes are not timed here: blocked, or its work refused)."""
    ranks = tuple(sorted(set(n_dp)))
    floors = np.full(len(n_dp), NEVER, dtype=np.int64)
    by_key: dict = {}
    for i, t in enumerate(terms):
        if t is None or t[0].refused:
            continue
        work, consts = t
        floors[i] = work.floor
        works, index, which, members, rows = by_key.setdefault(work.flat.key, ([], {}, [], [], []))
        if id(work) not in index:
            index[id(work)] = len(works)
            works.append(work)
        which.append(index[id(work)])
        members.append(i)
        rows.append(consts)
    groups = tuple((works[0].flat if len(works) == 1 else _stacked(works, np.array(which * 2, dtype=np.intp)),
                    len(works) > 1, np.array(members, dtype=np.intp), np.array(rows * 2, dtype=np.float64))
                   for works, _, which, members, rows in by_key.values())
    return Columns(ranks, np.array([ranks.index(r) for r in n_dp], dtype=np.intp),
                   np.array(fits, dtype=np.int64), floors, groups, {})


def auto_batches(cols: Columns, per_rank: list[int]) -> tuple[list[int], list[int]]:
    """(the largest batch that fits, the balanced batch) of each device whose data-parallel ranks each take
    per_rank[k] items (>= 1; k: its index into cols.ranks): estimate._fit and estimate.auto_batch on arrays, in whole
    numbers (ceil(a / b) = -(-a // b), the same as the floats' below 2^53)."""
    per_gpu = np.array(per_rank, dtype=np.int64)[cols.rank_of]
    fit = np.where(cols.fits > 0, np.maximum(1, np.minimum(per_gpu, cols.fits)), 0)
    passes = -(-per_gpu // np.maximum(fit, 1))
    return fit.tolist(), (-(-per_gpu // passes)).tolist()


class Timed(NamedTuple):
    """timed_passes' answer per device: items per GPU, full passes at the batch and the rest's batch; whether each
    was timed here; the seconds of those it timed (full x the batch's pass + the rest's); the live devices with a
    pass not timed here (`by_pass`); where each timed pass's split is (split_of)."""

    per_gpu: list[int]
    full: list[int]
    rest: list[int]
    on_batch: list[bool]
    on_rest: list[bool]
    seconds: np.ndarray
    by_pass: list[int]
    splits: list[np.ndarray]  # per group of cols: its rows' splits (rows x P x 4)
    at: np.ndarray  # (2, n, 2): per device, of its batch's and its rest's pass: (group, row) in splits (-1: none)


def timed_passes(cols: Columns, per_rank: list[int], batches: list[int], live: list[bool]) -> Timed:
    """Each live device's job (per_rank[k] items per data-parallel rank, as auto_batches) in passes of its batch:
    its full passes and the rest timed on arrays where they are past its floor (one flat_pass_arrays call per group
    of cols), summed phase by phase as estimate._sized sums them."""
    per_gpu = np.array(per_rank, dtype=np.int64)[cols.rank_of]
    batch, live = np.array(batches, dtype=np.int64), np.array(live, dtype=bool)
    full, rest = np.divmod(per_gpu, np.maximum(batch, 1))
    on_b, on_r = live & (batch > cols.floors), live & (rest > cols.floors)
    seconds = np.zeros(len(batch))
    splits, at = [], np.full((2, len(batch), 2), -1, dtype=np.intp)
    for g, (flat, stacked, members, consts) in enumerate(cols.groups):
        at_b, at_r = on_b[members], on_r[members]
        mb, mr = members[at_b], members[at_r]
        nb = mb.size
        if not (nb or mr.size):
            splits.append(None)
            continue
        if nb + mr.size < 2 * members.size:  # some rows are not timed here: the table's rows are the others
            rows = np.concatenate([np.flatnonzero(at_b), members.size + np.flatnonzero(at_r)])
            consts = consts[rows]
            if stacked:
                flat = flat._replace(**{name: getattr(flat, name)[..., rows] for name in _PER_WORK})
        t, split = flat_pass_arrays(flat, np.concatenate([batch[mb], rest[mr]]), consts)
        seconds[mb] = (t[:nb] * full[mb, None]).sum(axis=1)
        seconds[mr] += t[nb:].sum(axis=1)
        splits.append(split)
        at[0, mb, 0], at[0, mb, 1] = g, np.arange(nb)
        at[1, mr, 0], at[1, mr, 1] = g, np.arange(nb, nb + mr.size)
    by_pass = np.flatnonzero(live & ~(on_b & (on_r | (rest == 0)))).tolist()
    return Timed(per_gpu.tolist(), full.tolist(), rest.tolist(), on_b.tolist(), on_r.tolist(), seconds, by_pass,
                 splits, at)


def split_of(timed: Timed, i: int, rest: bool) -> np.ndarray | None:
    """The split per phase (P x 4, roofline.LIMITS' order) of device i's pass at its batch (or its rest's), None
    where that pass was not timed here."""
    g, k = timed.at[int(rest), i]
    return None if g < 0 else timed.splits[g][k]


def usd_per_hour(cols: Columns, prices: list, tiers: tuple[str, ...]) -> np.ndarray:
    """$/h per GPU of each tier (tiers x devices; NaN: no price) from each device's price mappings, kept in cols
    while they are the same objects."""
    key = tuple(map(id, prices))
    held = cols.prices.get(key)
    if held is None or any(a is not b for a, b in zip(held[0], prices)):
        if len(cols.prices) >= PRICE_TABLES_KEPT:
            cols.prices.clear()
        usd = [[p.usd_hr if p is not None else math.nan for p in (m.get(t) for m in prices)] for t in tiers]
        held = cols.prices[key] = (list(prices), np.array(usd, dtype=np.float64).reshape(len(tiers), len(prices)))
    return held[1]


def job_costs_usd(seconds: np.ndarray, n_gpus: int, usd: np.ndarray) -> list[list[float | None]]:
    """cost.job_cost_usd on arrays, the same operations in the same order: per tier (usd's rows) and device, None
    without a price or a finite time."""
    cost = seconds / SECONDS_PER_HOUR * n_gpus * usd
    ok = (np.isfinite(usd) & np.isfinite(seconds)).tolist()
    return [[c if k else None for c, k in zip(row, oks)] for row, oks in zip(cost.tolist(), ok)]
