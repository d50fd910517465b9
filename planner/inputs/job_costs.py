"""What a whole job pays for besides compute: pod start, image pull, model download, warm-up, checkpoint upload,
billing increments and spot interruptions (data/job_costs.yaml; every figure an assumption with its source)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from planner import DATA_DIR
from planner.base.schema import DataFileError, Record, bounded_assumptions, checked_changes, load_sections, unique_ids

JOB_COSTS_FILE = DATA_DIR / "job_costs.yaml"
# assumption id -> (lower bound, upper bound) of what a user may set
LIMITS = {"pod_start_s": (0.0, 3600.0), "image_gb": (0.0, 200.0), "pull_gb_per_s": (0.001, 100.0),
          "download_gb_per_s": (0.001, 100.0), "upload_gb_per_s": (0.001, 100.0), "billing_increment_s": (1.0, 3600.0),
          "spot_interruptions_per_h": (0.0, 60.0), "checkpoint_interval_s": (1.0, 86400.0)}


@dataclass(frozen=True)
class JobOverheads:
    """The assumptions, in seconds, decimal GB, GB/s and interruptions per hour; warmup_s per runtime id."""

    pod_start_s: float
    image_gb: float
    pull_gb_per_s: float
    download_gb_per_s: float
    upload_gb_per_s: float
    billing_increment_s: float
    spot_interruptions_per_h: float
    checkpoint_interval_s: float
    warmup_s: tuple[tuple[str, float], ...]
    sources: tuple[tuple[str, str], ...]

    def warmup(self, runtime: str) -> float:
        return dict(self.warmup_s).get(runtime, 0.0)


@lru_cache(maxsize=4)
def load_job_costs(path: str | Path = JOB_COSTS_FILE, runtime_ids: tuple[str, ...] = ()) -> JobOverheads:
    """Validated assumptions; with runtime_ids, every runtime must have a warm-up (DataFileError otherwise)."""
    doc = load_sections(path, ("assumptions", "warmup_s"), dated=True)
    values, sources = bounded_assumptions(path, doc["assumptions"], LIMITS)
    warm = []
    for i, raw in enumerate(doc["warmup_s"]):
        rec = Record.of(path, i, raw)
        rec.check_keys(("id", "value", "unit", "source"))
        warm.append((rec.text("id"), rec.number("value", lo=0, hi=86400)))
        sources[f"warmup_s.{warm[-1][0]}"] = rec.text("source")
    unique_ids(path, (w[0] for w in warm))
    lacking = sorted(set(runtime_ids) - {w[0] for w in warm})
    if lacking:
        raise DataFileError(path, "-", "warmup_s", f"no warm-up for runtime(s) {', '.join(lacking)}")
    return JobOverheads(**values, warmup_s=tuple(warm), sources=tuple(sorted(sources.items())))


def with_values(o: JobOverheads, changes: dict[str, float]) -> JobOverheads:
    """The assumptions with some values changed by the user, each checked against LIMITS (ValueError naming it)."""
    checked_changes("job-cost", LIMITS, changes)
    return replace(o, **changes)
