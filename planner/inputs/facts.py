"""Everything the engine reads, loaded once at the boundary: GPU catalog, precision rules, runtimes, prices and the
PyTorch build matrix."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date
from functools import lru_cache

from planner.inputs.builds import BuildMatrix, load_builds
from planner.inputs.catalog import Catalog, load_catalog
from planner.inputs.own_gpu import own_gpu_device, parse_own_gpu, with_own_gpu
from planner.inputs.precisions import PrecisionRules, load_rules
from planner.inputs.price_snapshot import PriceTable, snapshot_table
from planner.inputs.runtimes import Runtimes, load_runtimes


@dataclass(frozen=True)
class Facts:
    """The engine's inputs besides the plan. Swap a part with dataclasses.replace (live prices, derived rules)."""

    catalog: Catalog
    rules: PrecisionRules
    runtimes: Runtimes
    prices: PriceTable
    builds: BuildMatrix


@lru_cache(maxsize=1)
def load_facts() -> Facts:
    """The committed data files (data/), parsed and validated once; raises DataFileError naming a broken file."""
    catalog = load_catalog()
    return Facts(catalog, load_rules(), load_runtimes(), snapshot_table(catalog), load_builds())


@lru_cache(maxsize=32)
def facts_with_own_gpu(description: str, day: date) -> Facts:
    """The committed facts with the GPU a user described (planner.inputs.own_gpu, its price dated `day`) in the
    catalog; the committed facts for ''. ValueError naming the field of a description that can't be read."""
    facts = load_facts()
    if not description.strip():
        return facts
    gpu = own_gpu_device(parse_own_gpu(description), facts.catalog, day)
    return replace(facts, catalog=with_own_gpu(facts.catalog, gpu))
