"""The whole job's time and cost: compute plus what a rented pod also bills for.

billed seconds = start (pod start + image pull) + model download + warm-up + compute + checkpoint upload (training)
+ expected rework from spot interruptions, rounded up to the billing increment; cost = billed hours x GPUs x $/h.
Each interruption (a Poisson rate per hour of the job) repeats the start, download and warm-up and loses half a
checkpoint interval of work (or half the compute, if shorter). Pure: the assumptions arrive as JobOverheads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.base.units import BYTES_PER_GB, FP32_BYTES, SECONDS_PER_HOUR
from planner.engine.estimate import Estimate
from planner.inputs.jobs import OPTIMIZERS, Train
from planner.inputs.job_costs import JobOverheads

PARTS = ("start", "download", "warm-up", "compute", "checkpoint upload", "spot rework", "billing round-up")


@dataclass(frozen=True)
class JobCost:
    """Seconds per part of the job (PARTS order), the billed total and its cost per tier price."""

    parts: tuple[tuple[str, float], ...]
    billed_s: float
    cost_usd: float | None

    @property
    def seconds(self) -> dict[str, float]:
        return dict(self.parts)

    @property
    def overhead_s(self) -> float:
        return self.billed_s - self.seconds["compute"]


def model_gb(e: Estimate) -> float:
    """The model's files to download: its weights in the plan's precision (decimal GB)."""
    return e.plan.model.params * e.setup.precision.weight_bytes / BYTES_PER_GB


def checkpoint_gb(e: Estimate) -> float:
    """A training checkpoint: fp32 weights and optimizer states (decimal GB); 0 outside training."""
    w = e.plan.workload
    if not isinstance(w, Train):
        return 0.0
    return e.plan.model.params * (FP32_BYTES + OPTIMIZERS[w.optimizer]) / BYTES_PER_GB


def job_cost(e: Estimate, o: JobOverheads, tier: str | None = None) -> JobCost | None:
    """The whole job on one pod of e.plan.gpus GPUs; None when the plan can't run there."""
    if not e.feasible or e.seconds is None:
        return None
    tier = tier or e.plan.price_tier
    start = o.pod_start_s + o.image_gb / o.pull_gb_per_s
    download = model_gb(e) / o.download_gb_per_s
    warmup = o.warmup(e.plan.runtime)
    upload = checkpoint_gb(e) / o.upload_gb_per_s
    restart = start + download + warmup
    rework = 0.0
    if tier == "spot":
        hours = (restart + e.seconds + upload) / SECONDS_PER_HOUR
        rework = o.spot_interruptions_per_h * hours * (restart + min(o.checkpoint_interval_s, e.seconds) / 2)
    work = restart + e.seconds + upload + rework
    billed = math.ceil(work / o.billing_increment_s) * o.billing_increment_s
    parts = (("start", start), ("download", download), ("warm-up", warmup), ("compute", e.seconds),
             ("checkpoint upload", upload), ("spot rework", rework), ("billing round-up", billed - work))
    price = e.prices.get(tier)
    cost = billed / SECONDS_PER_HOUR * e.plan.gpus * price.usd_hr if price else None
    return JobCost(parts, billed, cost)
