"""The least-squares fit of the factors: bandwidth efficiency, compute efficiency and per-kernel overhead for which
the planner's estimator reproduces a bench's measured times (fit_factors, with their 95 % uncertainty), and the plain
sentences on what the points could not pin down (fit_problems)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from planner.base.units import BYTES_PER_GB
from planner.calibration.growth import solve
from planner.calibration.measured import Point, eager_prior, factor_efficiency, on_host, point_phases
from planner.engine.roofline import phase_seconds, time_phase
from planner.inputs.bench_result import CalibrationError
from planner.inputs.catalog import GPU
from planner.inputs.runtimes import Efficiency

# Fit bounds, relative to the reference peaks (measured ones on the device; a CPU's caches can beat the DRAM copy)
EFF_BOUNDS = (0.005, 8.0)
LO_BOUNDS = (0.01, 5000.0)
PRIOR_WEIGHT = 0.003  # weak log-normal pull toward the micro-benchmarks, so unidentified factors stay sensible
FACTORS = ("bandwidth", "compute", "overhead")  # the fitted factors, in the fit's parameter order
FACTOR_NAMES = {"bandwidth": "bandwidth efficiency", "compute": "compute efficiency", "overhead": "per-kernel overhead"}
# What pins each factor down: steps whose time it dominates.
MISSING = {
    "bandwidth": "memory-bound steps (decode at batch 1 of a model whose weights are far larger than the CPU cache "
                 "or GPU L2: `python -m planner.bench` without --model measures one)",
    "compute": "compute-bound steps (forward or training passes over thousands of tokens at once, or your model at "
               "larger input sizes)",
    "overhead": "overhead-bound steps (many small kernels: decode of a narrow model at batch 1, which the default "
                "bench measures, or your model at its smallest input sizes)",
}
NOISE_FLOOR = 0.01  # timing repeatability assumed at least (1 % relative): a perfect fit still has this uncertainty
# A factor is pinned down when a 1 % timing noise moves it by at most COND_LIMIT % (its design standard error):
# e.g. one point whose time it explains entirely gives 1, three points where it explains 30 % about 2.
COND_LIMIT = 3.0
LOOSE_PCT = 50.0  # a pinned factor whose 95 % uncertainty is wider than this is reported as loosely fitted
ERR_CAP_PCT = 1000.0  # uncertainty reported when it can't be estimated (as many points as factors, or worse)
# Two-sided 95 % quantiles of Student's t by degrees of freedom: NIST/SEMATECH e-Handbook of Statistical Methods,
# table 1.3.6.7.2 (https://www.itl.nist.gov/div898/handbook/eda/section3/eda3672.htm), read 2026-11-22.
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
       11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086,
       21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042,
       40: 2.021, 60: 2.000, 100: 1.984}


def _jacobian(resid: Callable[[list[float]], list[float]], x: list[float], h: float = 1e-4) -> list[list[float]]:
    """d residual_i / d x_j by central differences (the roofline's max() has kinks: an average slope there)."""
    cols = []
    for j in range(len(x)):
        up, down = list(x), list(x)
        up[j] += h
        down[j] -= h
        cols.append([(a - b) / (2 * h) for a, b in zip(resid(up), resid(down))])
    return [list(row) for row in zip(*cols)]


def _normal(jac: list[list[float]], weight: float) -> list[list[float]]:
    """J^T J + weight x I (the prior's information added on the diagonal)."""
    k = len(jac[0])
    return [[sum(r[i] * r[j] for r in jac) + (weight if i == j else 0.0) for j in range(k)] for i in range(k)]


def _inverse(a: list[list[float]]) -> list[list[float]]:
    k = len(a)
    cols = [solve(a, [1.0 if i == j else 0.0 for i in range(k)]) for j in range(k)]
    return [[cols[j][i] for j in range(k)] for i in range(k)]


def _levenberg_marquardt(resid: Callable[[list[float]], list[float]], x0: list[float],
                         bounds: list[tuple[float, float]], iters: int = 60) -> list[float]:
    """Minimise the sum of squared residuals within box bounds (a step leaving the box is clipped to it)."""
    clip = lambda x: [min(max(v, lo), hi) for v, (lo, hi) in zip(x, bounds)]
    x = clip(x0)
    cost = sum(r * r for r in resid(x))
    damping = 1e-3
    for _ in range(iters):
        r, jac = resid(x), _jacobian(resid, x)
        a, g = _normal(jac, 0.0), [sum(row[j] * ri for row, ri in zip(jac, r)) for j in range(len(x))]
        while damping < 1e9:
            damped = [[a[i][j] + (damping * (a[i][i] + 1e-9) if i == j else 0.0) for j in range(len(x))]
                      for i in range(len(x))]
            try:
                step = solve(damped, [-v for v in g])
            except ZeroDivisionError:
                step = [0.0] * len(x)
            trial = clip([v + d for v, d in zip(x, step)])
            trial_cost = sum(v * v for v in resid(trial))
            if trial_cost < cost:
                break
            damping *= 4.0
        else:
            return x
        improvement = cost - trial_cost
        x, cost, damping = trial, trial_cost, max(damping / 3.0, 1e-9)
        if improvement < 1e-12 * max(cost, 1e-12) or max(abs(d) for d in step) < 1e-9:
            break
    return x


@dataclass(frozen=True)
class Fit:
    """Fitted factors (fractions of `gpu`'s peaks; launch overhead in us), their 95 % uncertainty and what the points
    could not pin down.

    err_pct: per factor (FACTORS order) the 95 % interval's relative half-width in percent, from the residuals: the
        covariance s^2 (J^T J + prior)^-1 of the log-factors, s^2 the residual variance (at least NOISE_FLOOR^2),
        times Student's t for the points' degrees of freedom. ERR_CAP_PCT when it can't be estimated.
    unidentified: factors that no point constrains (design standard error above COND_LIMIT per unit of timing
        noise) or that ran into their bounds; `problems()` says which measurements would pin them down.
    """

    mem_bw_efficiency: float
    compute_efficiency: float
    overhead_us: float
    rms_pct: float
    points: int
    err_pct: tuple[float, float, float]
    unidentified: tuple[str, ...]


def _t95(dof: int) -> float:
    """Two-sided 95 % quantile of Student's t with `dof` >= 1 degrees of freedom: T95 at the largest tabled dof not
    above it (t falls as dof grows, so this errs wide)."""
    return T95[max(d for d in T95 if d <= dof)]


def fit_problems(unidentified: Iterable[str], points: int, err_pct: Iterable[float] | None = None,
                 rms_pct: float = 0.0) -> list[str]:
    """Plain sentences: which factors the points could not pin down and which measurements would; which ones the
    points pin down but only loosely (95 % uncertainty above LOOSE_PCT: noisy times, or points the roofline can't
    all fit)."""
    out = []
    if 0 < points <= len(FACTORS):
        out.append(f"only {points} measured point{'s' if points > 1 else ''} for {len(FACTORS)} factors: the fit's "
                   "uncertainty can't be estimated; measure more points")
    names = [f for f in FACTORS if f in set(unidentified)]
    if len(names) > 1:
        out.append(f"ill-conditioned: these points can't separate {' from '.join(FACTOR_NAMES[f] for f in names)} "
                   f"(held near the micro-benchmarks); add " + "; and ".join(MISSING[f] for f in names))
    elif names:
        out.append(f"ill-conditioned: no point pins down the {FACTOR_NAMES[names[0]]} (held near the "
                   f"micro-benchmarks); add {MISSING[names[0]]}")
    loose = [FACTOR_NAMES[f] for f, e in zip(FACTORS, err_pct or ()) if f not in names and e > LOOSE_PCT
             and points > len(FACTORS)]
    if loose:
        it, them = ("it", "it dominates") if len(loose) == 1 else ("them", "each dominates")
        out.append(f"loose fit: {', '.join(loose)} uncertain by more than {LOOSE_PCT:g} %: the points constrain "
                   f"{it} only weakly, or disagree with the roofline (rms {rms_pct:.2g} %); more points where {them}, "
                   "or times from an idle machine (on a CPU: --threads 1 --clock cpu, the default), narrow "
                   f"{it}")
    return out


def demonstrated_floors(work: list[tuple[tuple, float]], gpu: GPU, eff: Efficiency) -> tuple[float, float]:
    """The least (bandwidth, compute) efficiency, of `gpu`'s peaks, that the measured steps allow. Each step (phases,
    log seconds) moved the bytes and did the FLOPs the planner counts for it within its measured time, so the device
    streams at least bytes / time, and its compute at full efficiency (the engine's ceilings and GEMM-shape factors)
    takes no more than the measured time times the efficiency. Without these floors the other points pull a GPU's fit
    below what its own wide steps achieved (validation/REPORT.md, 'A real GPU')."""
    full = replace(eff, mem_bw_efficiency=1.0, compute_efficiency=1.0)
    bw = mm = 0.0
    for phases, log_s in work:
        seconds = math.exp(log_s)
        groups = [(g, ph.passes) for ph in phases for g in time_phase(ph, gpu, full).groups]
        bw = max(bw, sum(g.bytes * n for g, n in groups) / (seconds * gpu.mem_bw_gbps * BYTES_PER_GB))
        mm = max(mm, sum(g.compute_s * n for g, n in groups) / seconds)
    return bw, mm


def fit_factors(points: list[Point], gpu: GPU, prior: tuple[float, float, float]) -> Fit:
    """Least squares on log time with box bounds: bandwidth and compute efficiency (of `gpu`'s peaks) and launch
    overhead (us per kernel), with their uncertainty.

    A weak log-normal prior (weight PRIOR_WEIGHT per factor) centred on `prior` (bandwidth, compute, launch us:
    the micro-benchmarks, or another fit) keeps factors that the points cannot identify sensible; such factors are
    reported in Fit.unidentified, never silently trusted. On a GPU bandwidth and compute never go below what a
    measured step demonstrably achieved (demonstrated_floors).
    """
    if not points:
        raise CalibrationError("no workload points to fit; run the benchmark with at least one workload")
    work = [(point_phases(pt, gpu), math.log(pt.measured_s)) for pt in points]
    base = eager_prior(gpu.memory_class)
    centre = [math.log(v) for v in prior]
    box = [tuple(map(math.log, b)) for b in (EFF_BOUNDS, EFF_BOUNDS, LO_BOUNDS)]
    # on a GPU only: a CPU's caches can serve a step's bytes faster than its DRAM copy runs (EFF_BOUNDS)
    floors = demonstrated_floors(work, gpu, base) if on_host(gpu.memory_class) else (0.0, 0.0)
    bounds = [(max(b[0], math.log(max(EFF_BOUNDS[0], f))), b[1]) for b, f in zip(box[:2], floors)] + box[2:]
    prior_w = math.sqrt(PRIOR_WEIGHT)

    def efficiency(x):
        return factor_efficiency(base, *(math.exp(v) for v in x), gpu.memory_class)

    def data_resid(x):
        eff = efficiency(x)
        return [math.log(sum(phase_seconds(ph, gpu, eff) for ph in phases)) - y for phases, y in work]

    def resid(x):
        return data_resid(x) + [prior_w * (a - c) for a, c in zip(x, centre)]

    cost = lambda x: sum(r * r for r in resid(x))
    starts = sorted(([centre[0] + a, centre[1] + b, centre[2] + c] for a in (-2.0, -1.0, 0.0, 1.0)
                     for b in (-1.5, -0.5, 0.3) for c in (-1.5, 0.0, 1.5)), key=cost)
    # the roofline's max() makes the surface piecewise: polish the six best starts and keep the best (three missed the
    # known factors of a synthetic RTX 4090 result once small kernels took their minimum duration: another kink)
    x = min((_levenberg_marquardt(resid, s, bounds) for s in starts[:6]), key=cost)
    rel = [math.exp(r) - 1 for r in data_resid(x)]
    n = len(points)
    jac = _jacobian(data_resid, x)
    design = _inverse(_normal(jac, PRIOR_WEIGHT))
    dof = n - len(FACTORS)
    s2 = max(sum(r * r for r in data_resid(x)) / dof, NOISE_FLOOR ** 2) if dof > 0 else math.inf
    err, unidentified = [], []
    for j, name in enumerate(FACTORS):
        half = _t95(dof) * math.sqrt(s2 * design[j][j]) if dof > 0 else math.inf
        err.append(min(ERR_CAP_PCT, 100 * (math.exp(min(half, 50.0)) - 1)))
        at_bound = min(abs(x[j] - box[j][0]), abs(x[j] - box[j][1])) < 1e-6  # the floor is a measurement, not a limit
        if math.sqrt(design[j][j]) > COND_LIMIT or at_bound:
            unidentified.append(name)
    bw, mm, lo = (math.exp(v) for v in x)
    return Fit(bw, mm, lo, 100 * math.sqrt(sum(r * r for r in rel) / n), n, tuple(err), tuple(unidentified))


def fit_layers(pts: list[Point], gpu: GPU, launch_us: float) -> Fit:
    """The fit of a result's points. With model runs (`--model`) the factors are the model's own: fitted on its
    points alone, centred on the fit of the decoder points (the bench's anchors) instead of the micro-benchmarks, so a
    factor the model's steps don't exercise (launch overhead, for a model that is compute-bound here) takes the
    anchors' value and uncertainty; a factor neither pins down is reported. One set of factors can't serve both:
    a model's op mix reaches its own fractions of the peaks (its FLOPs are counted by torch, a decoder's by formula)."""
    micro = (1.0, 1.0, launch_us)
    decoders, runs = [pt for pt in pts if not pt.from_run], [pt for pt in pts if pt.from_run]
    if not runs or not decoders:
        return fit_factors(pts, gpu, micro)
    anchors = fit_factors(decoders, gpu, micro)
    own = fit_factors(runs, gpu, (anchors.mem_bw_efficiency, anchors.compute_efficiency, anchors.overhead_us))
    errs, unpinned = [], []
    for j, name in enumerate(FACTORS):
        from_anchors = name in own.unidentified
        errs.append(anchors.err_pct[j] if from_anchors else own.err_pct[j])
        if from_anchors and name in anchors.unidentified:
            unpinned.append(name)
    return replace(own, err_pct=tuple(errs), unidentified=tuple(unpinned), points=len(pts))
