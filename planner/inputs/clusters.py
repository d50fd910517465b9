"""The providers' multi-node cluster offers (data/clusters.yaml): which GPUs each rents as clusters, how many, on what
terms, with sources. A plan larger than one node names the offers of its GPU and the providers that offer none."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from planner import DATA_DIR
from planner.base.schema import Record, load_yaml
from planner.inputs.catalog import load_catalog

CLUSTERS_FILE = DATA_DIR / "clusters.yaml"
TERMS = ("self-service", "reserved", "by-request")
MAX_CLUSTER_GPUS = 100_000  # parser cap on a stated cluster size


@dataclass(frozen=True)
class ClusterOffer:
    """One provider's multi-node offer: the catalog GPUs it comes with, its size range in GPUs (None: not stated),
    terms (TERMS), the network between nodes in words, where to order it and the source."""

    provider: str
    offer: str
    terms: str
    gpus: tuple[str, ...]
    min_gpus: int | None
    max_gpus: int | None
    network: str
    url: str
    source: str

    def fits(self, gpu_id: str, n_gpus: int) -> bool:
        """Whether a cluster of n_gpus of gpu_id is within this offer (an unstated bound does not exclude it)."""
        return (gpu_id in self.gpus and (self.min_gpus is None or n_gpus >= self.min_gpus)
                and (self.max_gpus is None or n_gpus <= self.max_gpus))

    def describe(self) -> str:
        """The offer in a few words: provider, name, size, terms, network."""
        lo, hi = self.min_gpus, self.max_gpus
        size = (f"{lo:,}-{hi:,} GPUs" if lo and hi else f"from {lo:,} GPUs" if lo else f"up to {hi:,} GPUs" if hi
                else "size not stated")
        return f"{self.provider} {self.offer} ({size}, {self.terms}; {self.network})"


@dataclass(frozen=True)
class ClusterOffers:
    offers: tuple[ClusterOffer, ...]

    @property
    def providers(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(o.provider for o in self.offers))

    def for_plan(self, gpu_id: str, n_gpus: int) -> tuple[tuple[ClusterOffer, ...], tuple[ClusterOffer, ...],
                                                          tuple[str, ...]]:
        """(offers that fit n_gpus of gpu_id, offers of that GPU of another size, providers with no offer of it)."""
        fit = tuple(o for o in self.offers if o.fits(gpu_id, n_gpus))
        other = tuple(o for o in self.offers if gpu_id in o.gpus and o not in fit)
        with_gpu = {o.provider for o in fit + other}
        return fit, other, tuple(p for p in self.providers if p not in with_gpu)


@lru_cache(maxsize=4)
def load_cluster_offers(path: str | Path = CLUSTERS_FILE) -> ClusterOffers:
    """The offers of `path`, each checked (DataFileError naming the record and field): terms, catalog GPU ids, a size
    range with min <= max."""
    known = set(load_catalog().ids())
    offers = []
    for i, raw in enumerate(load_yaml(path, "offers", dated=True)):
        rec = Record.of(path, i, raw)
        rec.check_keys(("provider", "offer", "terms", "gpus", "min_gpus", "max_gpus", "network", "url", "source"))
        gpus = rec.strings("gpus")
        unknown = [g for g in gpus if g not in known]
        if unknown:
            raise rec.fail("gpus", f"{unknown[0]!r} is not a GPU of data/gpus.yaml")
        lo = rec.number("min_gpus", required=False, lo=2, hi=MAX_CLUSTER_GPUS, integer=True)
        hi = rec.number("max_gpus", required=False, lo=2, hi=MAX_CLUSTER_GPUS, integer=True)
        if lo and hi and hi < lo:
            raise rec.fail("max_gpus", f"is below min_gpus ({lo:g})")
        offers.append(ClusterOffer(rec.text("provider"), rec.text("offer"), rec.text("terms", choices=TERMS), gpus,
                                   int(lo) if lo else None, int(hi) if hi else None, rec.text("network"),
                                   rec.text("url"), rec.text("source")))
    return ClusterOffers(tuple(offers))
