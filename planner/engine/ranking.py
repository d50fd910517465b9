"""Which GPU is best: the one objective (what the user is billed for the whole job), computed once per estimate,
and everything that orders or picks by it: the ranking, the call-outs, the user's own cards, the batch sweep.

Views and the CLI only format what this module decides. Pure: no file or network I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from collections.abc import Iterable, Mapping
from types import ModuleType

from planner.engine.estimate import Estimate, EfficiencyAdjust, estimate_many, items_per_gpu
from planner.engine.job_cost import JobCost, job_cost
from planner.engine.owning import OwnCost, estimate_owned, own_cost
from planner.engine.plan import Plan
from planner.inputs.catalog import GPU
from planner.inputs.facts import Facts
from planner.inputs.jobs import Train
from planner.inputs.job_costs import JobOverheads
from planner.inputs.ownership import OwnAssumptions, Owned


@dataclass(frozen=True, eq=False)
class Ranking:
    """Estimates in ranking order with each one's whole-job bill. Without overheads the bill is the compute cost
    alone (the engine's cost of the seconds in the plan's tier)."""

    estimates: tuple[Estimate, ...]
    jobs: Mapping[str, JobCost | None]  # by GPU id; None where the plan can't run or no overheads were given
    overheads: JobOverheads | None

    def job(self, e: Estimate) -> JobCost | None:
        """The whole job of a ranked estimate (start, download, warm-up, compute, billing increments)."""
        return self.jobs.get(e.gpu.id)

    def bill_usd(self, e: Estimate) -> float | None:
        """What the job bills on this GPU in the plan's tier: the ranking's objective; None without a price or when
        the plan can't run there."""
        if not e.feasible:
            return None
        if self.overheads is None:
            return e.cost()
        job = self.job(e)
        return job.cost_usd if job else None


def whole_job(e: Estimate, overheads: JobOverheads | None) -> JobCost | None:
    """The whole job of one estimate, or None (can't run, or no overheads given)."""
    return job_cost(e, overheads) if overheads is not None and e.feasible else None


def rank(estimates: Iterable[Estimate], overheads: JobOverheads | None) -> Ranking:
    """Feasible first, then by what the whole job bills, then by time, then by id: for short jobs the pod's
    overheads, not the compute, decide which GPU is cheapest."""
    ests = tuple(estimates)
    r = Ranking(ests, {e.gpu.id: whole_job(e, overheads) for e in ests}, overheads)

    def key(e: Estimate) -> tuple:
        cost = r.bill_usd(e)
        return (not e.feasible, cost is None, cost or 0.0, e.seconds if e.seconds is not None else math.inf, e.gpu.id)
    return replace(r, estimates=tuple(sorted(ests, key=key)))


@dataclass(frozen=True)
class Callout:
    label: str  # 'Fastest', 'Cheapest', 'Best value'
    why: str
    estimate: Estimate


# A policy, stated in one sentence on the page: how much dearer than the cheapest a faster GPU may be to be called
# the best value. Time x cost would pick a card 7x the cheapest bill when it is 8x faster.
BEST_VALUE_PREMIUM = 0.25
BEST_VALUE_RULE = (f"the fastest GPU whose bill is at most {BEST_VALUE_PREMIUM:.0%} above the cheapest")


def best_value(points: Iterable[tuple[str, float, float]]) -> str | None:
    """Of the (key, seconds, cost) points, the fastest whose cost is at most BEST_VALUE_PREMIUM above the cheapest
    (ties: the cheaper, then the key). Always on the Pareto front."""
    pts = [(k, s, c) for k, s, c in points if s is not None and c is not None and s > 0 and c > 0]
    if not pts:
        return None
    limit = min(c for _, _, c in pts) * (1 + BEST_VALUE_PREMIUM)
    return min((p for p in pts if p[2] <= limit), key=lambda p: (p[1], p[2], p[0]))[0]


def callouts(ranking: Ranking, rows: Iterable[Estimate] | None = None) -> list[Callout]:
    """The fastest, the cheapest and the best value among the `rows` (default: the whole ranking) that can run the
    plan with a bill; [] when none can. Ties go to the faster, then the lower id."""
    rows = ranking.estimates if rows is None else rows
    bill = {e.gpu.id: ranking.bill_usd(e) for e in rows}
    ok = [e for e in rows if e.feasible and e.seconds and bill[e.gpu.id] is not None]
    if not ok:
        return []
    fastest = min(ok, key=lambda e: (e.seconds, e.gpu.id))
    cheapest = min(ok, key=lambda e: (bill[e.gpu.id], e.seconds, e.gpu.id))
    best_id = best_value((e.gpu.id, e.seconds, bill[e.gpu.id]) for e in ok)
    best = next(e for e in ok if e.gpu.id == best_id)
    return [Callout("Fastest", "shortest time for the job", fastest),
            Callout("Cheapest", "lowest cost for the job", cheapest),
            Callout("Best value", BEST_VALUE_RULE, best)]


@dataclass(frozen=True)
class Mine:
    """Cards the user owns, the plan run on all of them, and owning them vs renting as many."""

    owned: Owned
    ranking: Ranking  # the plan on these cards alone, with the whole job a rented pod of as many would bill
    cost: OwnCost

    @property
    def estimate(self) -> Estimate:
        return self.ranking.estimates[0]

    @property
    def label(self) -> str:
        return f"{self.owned.count} × {self.estimate.gpu.name}"


def my_gpus(plan: Plan, owned: Iterable[Owned], facts: Facts, assumptions: OwnAssumptions,
            overheads: JobOverheads | None, adjust: EfficiencyAdjust | None = None) -> list[Mine]:
    """The plan on each kind of card the user owns (all cards of a kind together), with its cost to own."""
    out = []
    for o in owned:
        r = rank([estimate_owned(plan, o, facts, adjust)], overheads)
        e = r.estimates[0]
        out.append(Mine(o, r, own_cost(e, o, assumptions, r.bill_usd(e))))
    return out


def batch_grid(max_batch: int, limit: int, extra: Iterable[int] = ()) -> list[int]:
    """Batches to try: powers of two up to one step past the largest that fits (to show where memory runs
    out), the largest that fits, and `extra`; never above `limit` (the items there are to batch)."""
    top = max(1, max_batch)
    grid, b = set(), 1
    while b <= min(limit, 2 * top):
        grid.add(b)
        b *= 2
    grid.update(x for x in (min(top, limit), top + 1, *extra) if 1 <= x <= limit)
    return sorted(grid)


@dataclass(frozen=True)
class SweepPoint:
    """One GPU at one fixed batch: the estimate there, the largest batch that fits and the items the GPU has to batch
    (no batch can be larger)."""

    gpu: GPU
    batch: int
    max_batch: int
    items_per_gpu: int
    estimate: Estimate


def batch_sweep(plan: Plan, gpus: Iterable[GPU], facts: Facts, adjust: EfficiencyAdjust | None = None,
                arrays: ModuleType | None = None) -> list[SweepPoint]:
    """Each GPU at each batch of batch_grid, up to the items each GPU batches (the engine's own rule,
    estimate.items_per_gpu); points past the memory limit are kept, infeasible. All points are one sweep
    (estimate_many with a batch per point: the fixed parts are shared by every batch; `arrays` as there)."""
    gpus = list(gpus)
    autos = estimate_many(replace(plan, batch=None), gpus, facts, adjust, arrays)
    grids = []
    for auto in autos:
        limit = items_per_gpu(plan.workload, auto.data_ranks)
        grid = batch_grid(auto.max_batch, limit, [plan.batch] if plan.batch else [])
        per_rank = plan.workload.global_batch // auto.data_ranks if isinstance(plan.workload, Train) else 0
        if per_rank:  # a global batch takes the micro-batches that divide it (check_layout refuses the others)
            grid = [b for b in grid if per_rank % b == 0]
        grids.append((limit, grid))
    points = [(gpu, b) for gpu, (_, grid) in zip(gpus, grids) for b in grid]
    found = iter(estimate_many(plan, [g for g, _ in points], facts, adjust, arrays, [b for _, b in points]))
    return [SweepPoint(gpu, b, auto.max_batch, limit, next(found))
            for gpu, auto, (limit, grid) in zip(gpus, autos, grids) for b in grid]
