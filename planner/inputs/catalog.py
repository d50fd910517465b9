"""Device catalog: GPU specs (dense peak rates, VRAM, bandwidth) and RunPod prices from data/gpus.yaml, and CPU
devices (kind 'cpu': peaks from cores and vector units, host RAM as memory) from data/cpus.yaml."""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, replace
from datetime import date
from functools import cached_property, lru_cache
from pathlib import Path

from planner import DATA_DIR
from planner.base.schema import (DataFileError, Record, load_sections, load_yaml, normalize_name,
                                 parse_compute_capability, resolve_name, sm_label, unique_ids)
from planner.base.units import BYTES_PER_GB, gib_to_gb
from planner.inputs.cpus import CPUS_FILE, CpuSpec, load_cpu_specs

GPUS_FILE = DATA_DIR / "gpus.yaml"
LINKS_FILE = DATA_DIR / "interconnects.yaml"
REQUIRED_LINKS = ("nvlink", "pcie-p2p", "pcie-host")
# NCCL's ring protocols (data/interconnects.yaml: protocols): every link kind gives latencies for LL and Simple; LL128
# runs over NVLink only
PROTOCOLS = ("ll", "ll128", "simple")
PROTOCOL_NAMES = {"ll": "LL", "ll128": "LL128", "simple": "Simple"}  # as NCCL spells them
REQUIRED_PROTOCOLS = ("ll", "simple")
COMPUTE_PATHS = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8")
PRICE_TIERS = ("secure", "community", "spot")
RUNPOD_PROVIDER = "RunPod"  # the provider of data/gpus.yaml's, data/prices/*.yaml's and live prices
MARKETS = ("datacenter", "workstation", "consumer")
_PEAK_FIELD = {p: ("int8_tops" if p == "int8" else f"{p}_tflops") for p in COMPUTE_PATHS}
# A path PyTorch quietly replaces where the GPU lacks it: allow_tf32 / float32_matmul_precision('high'|'medium') only
# take effect on Ampere and later; older GPUs run those matmuls in fp32 (PyTorch docs, CUDA semantics, TF32).
PATH_FALLBACK = {"tf32": "fp32"}
# A listed $/GPU-hour outside these is a placeholder or an error (RunPod's cheapest GPU rents for ~$0.1/h, an
# 8-GPU B200 node ~$6/GPU-h: runpod_prices.csv); data/gpus.yaml, data/prices/ and live answers share them.
MIN_USD_HR, MAX_USD_HR = 0.01, 200.0
# A price the user types (own hardware, another cloud) may lie outside any listing, within a tenth of a cent and
# $1,000 per GPU-hour; the page's widget, share links and the price table all check these.
CUSTOM_MIN_USD_HR, CUSTOM_MAX_USD_HR = 0.001, 1000.0
MIB_PER_GIB = 1024
# Published matmul ceilings (MAMF, or another published best-of-shapes matmul benchmark) come in three families: 16-bit
# tensor-core matmuls, 8-bit ones and fp32 SGEMM on the CUDA cores. A path without its own figure takes its family's
# measured/datasheet ratio: fp16 runs at the bf16 datasheet rate on every catalog GPU that has bf16 (Volta and Turing
# measure the family in fp16), int8 at the fp8 rate where both exist (Hopper, Ada, Blackwell datasheets); tf32 has no
# published ceiling and takes the 16-bit ratio (an assumption: the same clocks and power limits hold it below the
# datasheet). fp32 is its own family only where a GPU of its vendor and architecture has a published SGEMM figure
# (SGEMM_FAMILY): the CUDA cores are not the tensor cores, whose ratio on Volta (0.76 of 125 TFLOPS: register-file
# bandwidth and power bound the HMMA pipes) says nothing of SGEMM's (0.90 of 15.7 in the same run: zzc0721/torch-
# performance-test-data database.md @9d828276, V100-SXM2-16GB). Elsewhere fp32 keeps the 16-bit ratio, as before.
SGEMM_FAMILY = "fp32"
CEILING_FAMILY = {"fp32": SGEMM_FAMILY, "tf32": "bf16", "fp16": "bf16", "bf16": "bf16", "fp8": "fp8", "int8": "fp8"}
CEILING_FAMILIES = ("bf16", "fp8", SGEMM_FAMILY)
# CUDA-core work that is neither a matmul nor a memory stream (weight unpacking, dp4a dot products in quantized GEMV
# kernels) runs on the SMs' 32-bit integer lanes: path ALU_PATH, at the fp32 peak (ceiling) times INT32_PER_FP32_LANES.
ALU_PATH = "int32"
# 32-bit integer add / multiply-add / bitwise results per clock per SM over fp32 fused multiply-adds, by compute
# capability (major, minor): NVIDIA CUDA C++ Programming Guide, 'Arithmetic Instructions' throughput table: 64 and 64
# on 7.x and 8.0, 64 integer against 128 fp32 on 8.6, 8.7, 8.9 and 9.0 (half of the CUDA cores take integer work);
# RTX Blackwell (12.x) unified its FP32/INT32 cores (NVIDIA RTX Blackwell GPU Architecture whitepaper). Data-center
# Blackwell (10.x) is not in the table: taken as Hopper's 1/2 (an assumption). AMD CDNA/RDNA vector ALUs and CPUs
# run 32-bit integer and fp32 instructions at one rate (1.0).
INT32_PER_FP32_LANES = {(8, 6): 0.5, (8, 7): 0.5, (8, 9): 0.5, (9, 0): 0.5, (10, 0): 0.5, (10, 3): 0.5}
# How much faster a GPU's tensor cores multiply fp16 when they accumulate in fp16 than in fp32, by (market, compute
# capability): NVIDIA's GeForce cards run fp32 accumulation at half the fp16-accumulate rate, the data-center and
# workstation cards of the same chips at the full rate (whose fp16 figure the catalog stores: data/gpus.yaml keeps
# the fp32-accumulate rate). Turing whitepaper (2018), Appendix A, RTX 2080 Ti: FP16 Tensor TFLOPS with FP16
# Accumulate 107.6, with FP32 Accumulate 53.8; GA102 whitepaper (NVIDIA Ampere GA102 GPU Architecture, 2020),
# RTX 3090: 142 / 71 dense; Ada whitepaper (NVIDIA Ada GPU Architecture, 2022), RTX 4090: 330.3 / 165.2 dense. RTX
# Blackwell (12.0) not listed: its whitepaper's GeForce figures were not checked here (1.0, the catalog's rate).
FP16_ACCUMULATE_SPEEDUP = {("consumer", (7, 5)): 2.0, ("consumer", (8, 6)): 2.0, ("consumer", (8, 9)): 2.0}
# a measured matmul may beat the datasheet rate by what boost clocks add (_published_ceilings)
MAX_CEILING_OVER_PEAK = 1.2
# GPUs one node holds unless data/gpus.yaml says otherwise: an HGX/DGX board carries 8 SXM GPUs, and PCIe servers
# (RunPod's pods too: gpuTypes maxGpuCount, shared/reference/runpod_api.md) at most 8-10 cards
DEFAULT_NODE_GPUS = 8
MAX_NODE_GPUS = 576  # an NVLink domain's upper bound (NVIDIA's NVL576 plans); a parser cap
MAX_SMS = 1024  # streaming multiprocessors (NVIDIA) or compute units (AMD); B200 has 148, MI300X 304
MAX_VRAM_GB = 2000.0  # the largest memory a filter or a GPU record may name (B200: 192 GB; headroom for what comes)
# The figures a record's `announced` block may name: only the vendor has published them (a launch page, a partner
# spec sheet), and no independent measurement of them was found; `dense_tflops` names every rate, `dense_tflops.<path>`
# one of them.
ANNOUNCEABLE = ("vram_gib", "mem_bw_gbps", "dense_tflops", *(f"dense_tflops.{p}" for p in COMPUTE_PATHS), "tdp_w",
                "sm_count", "interconnect")


# A price older than this is flagged as stale (a setting; RunPod re-prices community GPUs every few weeks, so a quarter
# is already long: runpod_prices.csv shows prices moving 10-40 % between its 2025 and 2026 reads).
STALE_AFTER_DAYS = 90
MAX_STALE_DAYS = 3650


@dataclass(frozen=True)
class Price:
    """A $/GPU-hour with where and when it was read; origin 'snapshot' (committed files), 'live' or 'custom'; the
    provider renting at it, and its region when it has one."""

    usd_hr: float
    date: date | None
    source: str
    origin: str = "snapshot"
    provider: str = RUNPOD_PROVIDER  # who rents it (data/prices/clouds for other clouds); a user's own price: theirs
    region: str | None = None  # where, when a cloud's offer is region-bound (RunPod's prices are not)

    def age_days(self, today: date) -> int | None:
        """Days since the price was read (None when undated)."""
        return None if self.date is None else (today - self.date).days

    def is_stale(self, today: date, stale_after_days: int = STALE_AFTER_DAYS) -> bool:
        """Older than the threshold, or of unknown date (a user's own price never is)."""
        if self.origin == "custom":
            return False
        age = self.age_days(today)
        return age is None or age > stale_after_days


@dataclass(frozen=True)
class Ceiling:
    """The dense matmul rate a GPU reaches on its best large GEMM in one path (TFLOPS), its ratio to the datasheet
    peak, and how it was obtained ('measured: ...' from a published matmul figure or a local bench, 'derived: ...')."""

    tflops: float
    ratio: float
    how: str
    burst_tflops: float = 0.0  # > 0: the short-burst (boost clock) ceiling this sustained one was scaled down from

    @property
    def measured(self) -> bool:
        return self.how.startswith("measured")


@dataclass(frozen=True)
class RunPodListing:
    gpu_type_ids: tuple[str, ...]
    secure: Price | None
    community: Price | None
    spot: Price | None

    def tier(self, name: str) -> Price | None:
        return getattr(self, name)


@dataclass(frozen=True)
class LinkProtocol:
    """One NCCL ring protocol over one link kind: the share of the link's bus bandwidth it moves data at (LL's capped
    per GPU generation: ((lowest compute capability, GB/s), ...) ascending), the latency each call pays (NCCL's base
    latency) and that of each hop of a ring."""

    id: str
    busbw_share: float
    call_latency_us: float
    hop_latency_us: float
    max_busbw_gbps: tuple[tuple[tuple[int, int], float], ...] = ()

    def busbw_gbps(self, bus_gbps: float, compute_capability: tuple[int, int] | None) -> float:
        """Bus bandwidth this protocol reaches on a link of `bus_gbps`, GB/s; NCCL caps LL by the GPUs' generation
        (below the first entry, the first applies: NCCL's 'else Volta'); no compute capability (AMD): no cap."""
        bw = bus_gbps * self.busbw_share
        if not self.max_busbw_gbps or compute_capability is None:
            return bw
        cap = self.max_busbw_gbps[0][1]
        for lowest, gbps in self.max_busbw_gbps:
            if compute_capability >= lowest:
                cap = gbps
        return min(bw, cap)


@dataclass(frozen=True)
class LinkKind:
    """A way GPUs exchange data (data/interconnects.yaml): what fraction of the link a collective reaches as bus
    bandwidth at large sizes, the NCCL protocols that run over it, each with its latencies, and the latency a ring hop
    takes beyond NCCL's model on a GPU generation where it was measured ((compute capability, us), exact match)."""

    id: str
    name: str
    busbw_fraction: float
    protocols: tuple[LinkProtocol, ...]
    source: str
    hop_added_us: tuple[tuple[tuple[int, int], float], ...] = ()

    def added_hop_us(self, compute_capability: tuple[int, int] | None) -> float:
        """Microseconds each ring hop takes beyond NCCL's model between GPUs of this compute capability (0 where no
        measurement says otherwise)."""
        return dict(self.hop_added_us).get(compute_capability, 0.0) if compute_capability else 0.0


@dataclass(frozen=True)
class ProtocolRate:
    """A protocol on one GPU's link: seconds per call, seconds per ring hop, bytes per second (bus bandwidth)."""

    id: str
    call_s: float
    hop_s: float
    bytes_per_s: float


@dataclass(frozen=True)
class Fabric:
    """The network between the nodes of a multi-node job (data/interconnects.yaml `fabrics`): NIC bandwidth per GPU
    (Gb/s), the share of a node's NICs a ring collective reaches as bus bandwidth, NCCL's latency of a ring step
    across the network per protocol (us), its network overhead on every other step (us; x3 for Simple), and its LL
    bus-bandwidth cap across 2 and more nodes (GB/s)."""

    id: str
    name: str
    gbits_per_gpu: float
    busbw_fraction: float
    hop_latency_us: tuple[tuple[str, float], ...]
    net_overhead_us: float
    ll_max_two_nodes_gbps: float
    ll_max_more_nodes_gbps: float
    source: str

    def node_gbps(self, gpus: int) -> float:
        """Bus bandwidth a ring reaches across nodes of `gpus` GPUs each, GB/s: their NICs x busbw_fraction."""
        return self.gbits_per_gpu / BITS_PER_BYTE * gpus * self.busbw_fraction

    def ll_cap_gbps(self, nodes: int) -> float:
        return self.ll_max_two_nodes_gbps if nodes <= 2 else self.ll_max_more_nodes_gbps


BITS_PER_BYTE = 8
# NCCL runs its Simple protocol's network overhead three times per step (tuning.cc: `if (p == NCCL_PROTO_SIMPLE)
# netOverhead *= 3`)
SIMPLE_NET_OVERHEAD_FACTOR = 3


@dataclass(frozen=True)
class Link:
    """A link kind at one GPU's bandwidth, reaching at most `max_gpus` GPUs of a job (None: any number); the GPU's
    compute capability sets NCCL's LL bandwidth cap (None: no cap). A cluster link (`fabric` set) joins nodes of
    `node_gpus` GPUs, inside over `kind`, between over `fabric`; its rates are for a job of `n_gpus` GPUs
    (GPU.link_for sets it)."""

    kind: LinkKind
    unidir_gbps: float  # the GPU's link, one direction, GB/s
    max_gpus: int | None
    compute_capability: tuple[int, int] | None = None
    node_gpus: int = 0
    fabric: Fabric | None = None
    n_gpus: int = 0
    group: bool = False  # built for a group spread over nodes (for_group): node_gpus is its members per node

    @property
    def bus_gbps(self) -> float:
        """Bus bandwidth a ring collective reaches at large sizes (Simple), GB/s (nccl-tests busbw)."""
        return self.unidir_gbps * self.kind.busbw_fraction

    @property
    def nodes(self) -> int:
        """Nodes a cluster link's job spans (1 for a link inside one node)."""
        return -(-self.n_gpus // self.node_gpus) if self.fabric else 1

    @cached_property
    def rates(self) -> tuple[ProtocolRate, ...]:
        """Each protocol's latencies and bandwidth on this link, in seconds and bytes per second."""
        if self.fabric:
            return tuple(self._cluster_rate(p) for p in self.kind.protocols)
        added = self.kind.added_hop_us(self.compute_capability)
        return tuple(ProtocolRate(p.id, p.call_latency_us * 1e-6, (p.hop_latency_us + added) * 1e-6,
                                  p.busbw_gbps(self.bus_gbps, self.compute_capability) * BYTES_PER_GB)
                     for p in self.kind.protocols)

    def _cluster_rate(self, p: LinkProtocol) -> ProtocolRate:
        """A protocol over nodes of this link: the slower of the intra-node and the fabric's bus bandwidth (the
        smallest node's NICs); each ring step's latency the mean over the ring's steps, nodes-1 of every n-1 across
        the network, the others inside at least NCCL's network overhead (data/interconnects.yaml, fabrics)."""
        f, n, nodes = self.fabric, self.n_gpus, self.nodes
        smallest = n - (nodes - 1) * self.node_gpus
        fabric_gbps = f.node_gbps(smallest) * p.busbw_share
        if p.id == "ll":
            fabric_gbps = min(fabric_gbps, f.ll_cap_gbps(nodes))
        gbps = min(p.busbw_gbps(self.bus_gbps, self.compute_capability), fabric_gbps)
        overhead = f.net_overhead_us * (SIMPLE_NET_OVERHEAD_FACTOR if p.id == "simple" else 1)
        inside = max(p.hop_latency_us + self.kind.added_hop_us(self.compute_capability), overhead)
        across = dict(f.hop_latency_us)[p.id]
        hop_us = ((n - nodes) * inside + (nodes - 1) * across) / (n - 1)
        return ProtocolRate(p.id, p.call_latency_us * 1e-6, hop_us * 1e-6, gbps * BYTES_PER_GB)

    @cached_property
    def _by_gpus(self) -> dict[int, Link]:
        return {}

    def for_gpus(self, n: int) -> Link:
        """This cluster link timed for a job of n GPUs (built once per n)."""
        link = self._by_gpus.get(n)
        if link is None:
            link = self._by_gpus[n] = replace(self, n_gpus=n)
        return link

    def for_group(self, n: int, per_node: int) -> Link:
        """This cluster link timed for a group of n GPUs with `per_node` of them (and of their NICs) in each node: a
        data-parallel or pipeline group whose members sit tensor-parallel ranks apart (built once per pair)."""
        key = (n, per_node)
        link = self._by_gpus.get(key)
        if link is None:
            link = self._by_gpus[key] = replace(self, n_gpus=n, node_gpus=per_node, group=True)
        return link

    def describe(self) -> str:
        """The link in a few words: its kind and bus bandwidth (a cluster's nodes and fabric too)."""
        inside = f"{self.kind.name}: {self.unidir_gbps:g} GB/s x {self.kind.busbw_fraction:g} bus"
        if not self.fabric:
            return inside
        f = self.fabric
        nodes = (f"{self.nodes} nodes, {self.node_gpus} of the group's GPUs in each" if self.group
                 else f"{self.nodes} nodes of up to {self.node_gpus} GPUs")
        return (f"{nodes}; inside, {inside}; between nodes, {f.name}: "
                f"{f.gbits_per_gpu:g} Gb/s per GPU x {f.busbw_fraction:g} bus")

    def describe_protocols(self) -> str:
        """Each NCCL protocol on this link: its bus bandwidth and latencies."""
        return "; ".join(f"{PROTOCOL_NAMES[r.id]} {r.bytes_per_s / BYTES_PER_GB:.4g} GB/s, {r.call_s * 1e6:g} us per "
                         f"call + {r.hop_s * 1e6:g} us per ring hop" for r in self.rates)


@dataclass(frozen=True)
class GPU:
    """One device model: a GPU, or a CPU socket with its host RAM when kind == 'cpu' (then `cpu` holds its cores,
    vector units and memory channels, and vram_gib is the host RAM). Peak rates are dense (no 2:4 sparsity);
    None = no hardware path."""

    id: str
    name: str
    aliases: tuple[str, ...]
    vendor: str
    architecture: str
    compute_capability: tuple[int, int] | None
    gfx_target: str | None
    market: str
    vram_gib: float
    reported_vram_mib: float | None  # what nvidia-smi reports (ECC reserve, driver) where it differs from vram_gib
    reported_vram_source: str
    memory_type: str
    mem_bw_gbps: float
    fp32_tflops: float
    tf32_tflops: float | None
    fp16_tflops: float | None
    bf16_tflops: float | None
    fp8_tflops: float | None
    int8_tops: float | None
    tdp_w: float | None
    pcie_gen: int | None
    pcie_unidir_gbps: float | None
    nvlink_unidir_gbps: float | None
    runpod: RunPodListing | None
    source: str
    notes: str
    kind: str = "gpu"  # 'gpu' or 'cpu'
    cpu: CpuSpec | None = None  # a catalog CPU's specification (None for GPUs and for measured CPUs)
    sm_count: int = 0  # SMs (NVIDIA) / compute units (AMD) a GEMM's tiles are spread over; 0 = unknown
    sm_source: str = ""
    published_ceilings: tuple[tuple[str, float], ...] = ()  # (family, measured TFLOPS) from data/gpus.yaml
    ceiling_source: str = ""
    ceiling_burst: bool = False  # its published ceiling is a short boost-clock burst (mamf-finder MAMF)
    # (family, power-saturated TFLOPS, burst TFLOPS of the same run) from data/gpus.yaml `sustained_matmul_tflops`
    sustained_ceilings: tuple[tuple[str, float, float], ...] = ()
    sustained_source: str = ""
    ceilings: tuple[tuple[str, Ceiling], ...] = ()  # per compute path, filled by derive_ceilings (load_catalog)
    links: tuple[Link, ...] = ()  # fastest first; link_for(n) picks the first that reaches n GPUs
    node_gpus: int = 0  # GPUs one node (server board, NVLink domain) holds: the intra-node links reach no more
    link_source: str = ""  # why the GPU has the links it has (P2P off, a bridged pair), where the catalog says
    announced: tuple[str, ...] = ()  # figures (ANNOUNCEABLE) only the vendor has published, not measured by others
    announced_source: str = ""  # what was searched for a measurement, and when

    def link_for(self, n_gpus: int) -> Link | None:
        """The link n GPUs of this model exchange data over (None: none known, e.g. more than one node holds and no
        fabric between nodes)."""
        link = next((k for k in self.links if k.max_gpus is None or n_gpus <= k.max_gpus), None)
        return link.for_gpus(n_gpus) if link is not None and link.fabric else link

    def in_nodes_of(self, node_gpus: int) -> GPU:
        """This GPU in servers of `node_gpus` GPUs (fewer than its catalog node holds, e.g. a 4-GPU board): no link
        inside a node reaches more, and the cluster's fabric joins nodes of that size. Itself when `node_gpus` is
        not smaller than its node or it has no node size."""
        if not self.node_gpus or node_gpus >= self.node_gpus:
            return self
        links = tuple(replace(k, node_gpus=node_gpus) if k.fabric
                      else replace(k, max_gpus=min(k.max_gpus or node_gpus, node_gpus)) for k in self.links)
        return replace(self, links=links, node_gpus=node_gpus)

    def without_p2p(self, host: LinkKind) -> GPU:
        """This GPU in a host whose driver reports no peer-to-peer between its GPUs (a VM or container that hides
        it; vLLM logs 'your platform lacks GPU P2P capability'): no NVLink inside a node (NVLink is peer-to-peer),
        PCIe through host memory (`host`, the pcie-host kind) at its PCIe bandwidth, also inside a cluster link's
        nodes. Itself when it has no PCIe bandwidth (the catalog knows no other path)."""
        if not self.pcie_unidir_gbps:
            return self
        links = tuple(replace(k, kind=host, unidir_gbps=self.pcie_unidir_gbps)
                      for k in self.links if k.fabric or k.kind.id != "nvlink")
        return replace(self, links=links)

    def with_fabric_gbits(self, gbits_per_node: float) -> GPU:
        """This GPU's cluster with `gbits_per_node` Gb/s of network between nodes shared by a node's GPUs (a cluster
        that states its network per node, e.g. '128 A100s with 400 Gbps'), at the fabric's bus fraction and
        latencies. Itself when it has no fabric."""
        if not self.node_gpus:
            return self
        per_gpu = gbits_per_node / self.node_gpus

        def slower(f: Fabric) -> Fabric:
            return replace(f, gbits_per_gpu=per_gpu, name=f"{f.name}, here {gbits_per_node:g} Gb/s a node of "
                                                          f"{self.node_gpus}")
        return replace(self, links=tuple(replace(k, fabric=slower(k.fabric)) if k.fabric else k for k in self.links))

    def peak_tflops(self, path: str) -> float | None:
        """Dense peak for a compute path ('fp32', 'tf32', 'fp16', 'bf16', 'fp8', 'int8'), or ALU_PATH: 32-bit
        integer instructions x 2 (FLOP-equivalents, as a fused multiply-add counts 2)."""
        if path == ALU_PATH:
            return self.fp32_tflops * self.int32_per_fp32
        return getattr(self, _PEAK_FIELD[path])

    @property
    def fp16_accumulate_speedup(self) -> float:
        """How much faster its tensor cores run a 16-bit GEMM that accumulates in fp16 than the fp32-accumulate rate
        the catalog stores (FP16_ACCUMULATE_SPEEDUP: 2.0 on GeForce cards, else 1.0)."""
        if self.vendor != "NVIDIA" or self.compute_capability is None:
            return 1.0
        return FP16_ACCUMULATE_SPEEDUP.get((self.market, self.compute_capability), 1.0)

    @property
    def int32_per_fp32(self) -> float:
        """32-bit integer instructions per clock per SM over fp32 multiply-adds (INT32_PER_FP32_LANES; 1.0 for AMD
        GPUs, CPUs and compute capabilities the table does not list)."""
        return INT32_PER_FP32_LANES.get(self.compute_capability, 1.0) if self.vendor == "NVIDIA" else 1.0

    def run_path(self, path: str) -> str | None:
        """The path matmuls asked to run in `path` actually take here: itself, its PATH_FALLBACK, or None."""
        if self.peak_tflops(path) is not None and (path != "tf32" or self.compute_capability is None
                                                   or self.compute_capability >= (8, 0)):
            return path
        fallback = PATH_FALLBACK.get(path)
        return fallback if fallback and self.peak_tflops(fallback) is not None else None

    def run_peak_tflops(self, path: str) -> float:
        """Dense peak of the path matmuls in `path` actually run at here (0 when none)."""
        return self._run_peak_by_path[path]

    @cached_property
    def _run_peak_by_path(self) -> dict[str, float]:
        """run_peak_tflops for every path, computed once (the roofline asks for it in its hot loop)."""
        out = {}
        for path in (*COMPUTE_PATHS, ALU_PATH):
            taken = self.run_path(path)
            out[path] = (self.peak_tflops(taken) or 0.0) if taken else 0.0
        return out

    @cached_property
    def _ceiling_by_path(self) -> dict[str, Ceiling]:
        return dict(self.ceilings)

    def ceiling(self, path: str) -> Ceiling:
        """The matmul ceiling of the path matmuls in `path` actually run at here (TFLOPS 0 when none); a GPU built
        outside the catalog without ceilings (tests, a measured device's unmeasured path) keeps its peak and says so."""
        if path == ALU_PATH:  # the fp32 lanes' clocks under load, at the integer lanes' share
            fp32, r = self.ceiling("fp32"), self.int32_per_fp32
            return Ceiling(fp32.tflops * r, fp32.ratio, f"{fp32.how}; 32-bit integer instructions at {r:g} x the fp32 "
                                                         "rate (INT32 lanes per SM, CUDA C++ Programming Guide)")
        taken = self.run_path(path)
        if taken is None:
            return Ceiling(0.0, 0.0, f"no {path} hardware path")
        found = self._ceiling_by_path.get(taken)
        if found is not None:
            return found
        return Ceiling(self.peak_tflops(taken) or 0.0, 1.0, "datasheet peak: no ceiling recorded for this device")

    @cached_property
    def _ceiling_tflops_by_path(self) -> dict[str, float]:
        return {p: self.ceiling(p).tflops for p in (*COMPUTE_PATHS, ALU_PATH)}

    def ceiling_tflops(self, path: str) -> float:
        """ceiling(path).tflops: what the roofline multiplies by the runtime and shape efficiencies (hot loop)."""
        return self._ceiling_tflops_by_path[path]

    @property
    def vram_gb(self) -> float:
        """Memory in decimal GB (1e9 B): GPU memory is marketed in GiB, so '24 GB' holds 24 x 2**30 bytes."""
        return gib_to_gb(self.vram_gib)

    @property
    def reported_vram_gb(self) -> float:
        """Memory the driver reports, decimal GB: the capacity less ECC (data-center GDDR cards keep 1/16 for it with
        ECC on, their default) and the driver's own reserve, where the catalog has the figure; else the capacity."""
        if self.reported_vram_mib is None:
            return self.vram_gb
        return gib_to_gb(self.reported_vram_mib / MIB_PER_GIB)

    @property
    def memory_class(self) -> str:
        """'hbm', 'gddr' or 'cpu' (host DRAM): the classes whose achievable fractions of peak differ."""
        if self.kind == "cpu":
            return "cpu"
        return "hbm" if self.memory_type.upper().startswith("HBM") else "gddr"

    @property
    def sm(self) -> str:
        """Compute capability as 'SM90' ('-' for AMD)."""
        return sm_label(self.compute_capability)

    def price(self, tier: str) -> Price | None:
        return self.runpod.tier(tier) if self.runpod else None

    def listed_prices(self) -> dict[str, Price | None]:
        """RunPod's price per tier as listed in data/gpus.yaml (None: not rented in that tier)."""
        return {t: self.price(t) for t in PRICE_TIERS}


@dataclass(frozen=True)
class Catalog:
    """The GPUs (what a ranking covers by default) and the CPU devices (ranked when named or asked for)."""

    gpus: tuple[GPU, ...]
    path: str
    cpus: tuple[GPU, ...] = ()

    @property
    def devices(self) -> tuple[GPU, ...]:
        return self.gpus + self.cpus

    def get(self, name: str) -> GPU:
        """Find a GPU or CPU by id, name, alias or family name ('4090', 'a100 80gb', '9654'); AmbiguousNameError
        lists the members of a family that holds several, UnknownNameError suggests the closest names."""
        for g in self.devices:  # an id as stored: the common case (plans, links, validation rows), no name matching
            if g.id == name:
                return g
        key = resolve_name(name, ((g.id, (g.name, *g.aliases)) for g in self.devices), "GPU")
        return next(g for g in self.devices if g.id == key)

    def ids(self) -> tuple[str, ...]:
        """Every device id, GPUs first."""
        return tuple(g.id for g in self.devices)

    def selection(self, include_cpus: bool = False) -> tuple[GPU, ...]:
        """The devices a ranking covers when none are named: the GPUs, and the CPUs if asked for."""
        return self.devices if include_cpus else self.gpus


def _names_of(gpu: GPU) -> set[str]:
    return {normalize_name(n) for n in (gpu.id, gpu.name, *gpu.aliases)}


def _quote(rec: Record, tier: str) -> Price | None:
    q = rec.child(tier, required=False)
    if q is None:
        return None
    q.check_keys(("usd_hr", "date", "source"))
    return Price(q.number("usd_hr", lo=MIN_USD_HR, hi=MAX_USD_HR), q.day("date"), q.text("source"))


def _runpod(rec: Record) -> RunPodListing | None:
    rp = rec.child("runpod", required=False)
    if rp is None:
        return None
    rp.check_keys(("gpu_type_ids", *PRICE_TIERS))
    return RunPodListing(rp.strings("gpu_type_ids"), *(_quote(rp, t) for t in PRICE_TIERS))


def _reported_vram(rec: Record) -> dict:
    """The optional `reported_vram: {mib, source}`: at most the capacity, at least 3/4 of it (ECC takes 1/16)."""
    sub = rec.child("reported_vram", required=False)
    if sub is None:
        return {"reported_vram_mib": None, "reported_vram_source": ""}
    sub.check_keys(("mib", "source"))
    cap_mib = rec.number("vram_gib", lo=1, hi=MAX_VRAM_GB) * MIB_PER_GIB
    return {"reported_vram_mib": sub.number("mib", lo=0.75 * cap_mib, hi=cap_mib),
            "reported_vram_source": sub.text("source")}


def _announced(rec: Record) -> dict:
    """Optional `announced: {fields, source}`: the figures of this record that only the vendor has published (names
    of ANNOUNCEABLE, each present in the record; a rate must not be null), with what was searched for a measurement."""
    sub = rec.child("announced", required=False)
    if sub is None:
        return {}
    sub.check_keys(("fields", "source"))
    fields = sub.strings("fields")
    if not fields:
        raise sub.fail("fields", "name at least one figure (or drop the block)")
    for name in fields:
        if name not in ANNOUNCEABLE:
            raise sub.fail("fields", f"{name!r} is not a figure that can be marked announced "
                                     f"(one of: {', '.join(ANNOUNCEABLE)})")
        top, _, path = name.partition(".")
        given = rec.data.get(top)
        if path:
            given = given.get(path) if isinstance(given, dict) else None
        if given is None:
            raise sub.fail("fields", f"{name!r} is not given in this record")
    if len(set(fields)) != len(fields):
        raise sub.fail("fields", "a figure is named twice")
    return {"announced": tuple(fields), "announced_source": sub.text("source")}


def _sm_count(rec: Record) -> dict:
    """`sm_count: {count, source}`: SMs (NVIDIA) or compute units (AMD). Every GPU in data/gpus.yaml has one
    (tests/inputs/test_catalog.py); a catalog of one's own may leave it out: no tile or wave quantization then."""
    sub = rec.child("sm_count", required=False)
    if sub is None:
        return {}
    sub.check_keys(("count", "source"))
    return {"sm_count": int(sub.number("count", lo=1, hi=MAX_SMS, integer=True)), "sm_source": sub.text("source")}


def _family_path(fam: str, rates: dict[str, float | None]) -> str:
    """The datasheet path a family's figure is measured in: the 16-bit family is bf16, or fp16 on a GPU without bf16
    (Volta, Turing)."""
    return "fp16" if fam == "bf16" and rates.get("bf16") is None else fam


def _published_ceilings(rec: Record, rates: dict[str, float | None]) -> dict:
    """Optional `matmul_ceiling_tflops: {bf16 (or fp16 on a GPU without bf16), fp8, date, source}`: a published
    measured matmul ceiling (best over a shape search), which captures the clocks the GPU holds under load (its power
    limit included). At most MAX_CEILING_OVER_PEAK x the datasheet peak of its path: GeForce cards boost above the
    clock their datasheet rate assumes (measured RTX 5090 238 bf16 TFLOPS vs 209.5, RTX 3080 Ti 76.5 vs 68.2), never
    by 20 %."""
    sub = rec.child("matmul_ceiling_tflops", required=False)
    if sub is None:
        return {}
    sub.check_keys((*CEILING_FAMILIES, "fp16", "burst", "date", "source"))
    if "fp16" in sub.data and rates.get("bf16") is not None:
        raise sub.fail("fp16", "this GPU has a bf16 rate: give the 16-bit figure as bf16")
    found = []
    for fam in CEILING_FAMILIES:
        key = _family_path(fam, rates)
        peak = rates.get(key)
        if key in sub.data and peak is None:
            raise sub.fail(key, f"a {key} ceiling on a GPU with no {key} datasheet rate")
        value = sub.number(key, required=False, lo=0.05 * (peak or 1), hi=MAX_CEILING_OVER_PEAK * (peak or 1))
        if value is not None:
            found.append((fam, value))
    if not found:
        raise sub.fail("bf16", "give at least one of bf16 (fp16 without bf16), fp8, fp32")
    return {"published_ceilings": tuple(found), "ceiling_source": f"{sub.text('source')} (read {sub.day('date')})",
            "ceiling_burst": sub.flag("burst", default=False)}


def _sustained(rec: Record, rates: dict[str, float | None]) -> dict:
    """Optional `sustained_matmul_tflops: {bf16, fp8, burst_bf16, burst_fp8, date, source}`: a published matmul ceiling
    held once the GPU draws its board power and its clock has settled (mamf-finder's MSMF), each beside the burst
    (boost-clock) figure of the same run (its MAMF), which the sustained one may not exceed: their ratio is what the
    power limit takes off a long compute-bound load (SUSTAINED_RULE)."""
    sub = rec.child("sustained_matmul_tflops", required=False)
    if sub is None:
        return {}
    sub.check_keys((*CEILING_FAMILIES, *(f"burst_{f}" for f in CEILING_FAMILIES), "date", "source"))
    found = []
    for fam in CEILING_FAMILIES:
        peak = rates.get(fam)
        lo, hi = 0.05 * (peak or 1), MAX_CEILING_OVER_PEAK * (peak or 1)
        burst = sub.number(f"burst_{fam}", required=False, lo=lo, hi=hi)
        value = sub.number(fam, required=False, lo=lo, hi=hi)
        if (value is None) != (burst is None):
            raise sub.fail(fam if value is None else f"burst_{fam}",
                           f"give {fam} and burst_{fam} together (the sustained figure and the same run's burst one)")
        if value is None:
            continue
        if peak is None:
            raise sub.fail(fam, f"a {fam} figure on a GPU with no {fam} datasheet rate")
        if value > burst:
            raise sub.fail(fam, f"the sustained figure {value:g} exceeds the same run's burst figure {burst:g}: "
                                "a power-saturated clock is never above the boost clock (swapped?)")
        found.append((fam, value, burst))
    if not found:
        raise sub.fail("bf16", "give at least one of bf16, fp8 (each with its burst_ figure)")
    return {"sustained_ceilings": tuple(found), "sustained_source": f"{sub.text('source')} (read {sub.day('date')})"}


def _links(ic: Record, kinds: dict[str, LinkKind], fabrics: dict[str, Fabric],
           cc: tuple[int, int] | None) -> tuple[Link, ...]:
    """The GPU's links, fastest first: NVLink (a bridge reaching `nvlink_peers` peers, else every GPU of a node),
    then PCIe, with peer-to-peer unless `pcie_p2p: false`, each within one node of `node_gpus`; then, with a
    `fabric`, the cluster link over nodes (inside over the link that reaches a whole node). `cc`, the GPU's compute
    capability, caps NCCL's LL."""
    node = _node_gpus(ic)
    links = []
    nvlink = ic.number("nvlink_unidir_gbps", required=False, lo=1, hi=10000)
    peers = ic.number("nvlink_peers", required=False, lo=1, hi=1000, integer=True)
    if nvlink:
        links.append(Link(kinds["nvlink"], nvlink, min(int(peers) + 1, node) if peers else node, cc))
    elif peers:
        raise ic.fail("nvlink_peers", "given without nvlink_unidir_gbps")
    pcie = ic.number("pcie_unidir_gbps", required=False, lo=1, hi=1000)
    if pcie:
        links.append(Link(kinds["pcie-p2p" if ic.flag("pcie_p2p", default=True) else "pcie-host"], pcie, node, cc))
    fabric_id = ic.text("fabric", required=False, choices=tuple(fabrics))
    inside = next((k for k in links if k.max_gpus == node), None)
    if fabric_id and inside is None:
        raise ic.fail("fabric", f"no link inside the node reaches all {node} GPUs (give nvlink or pcie bandwidth)")
    if fabric_id:
        links.append(replace(inside, max_gpus=None, node_gpus=node, fabric=fabrics[fabric_id]))
    return tuple(links)


def _node_gpus(ic: Record) -> int:
    return int(ic.number("node_gpus", required=False, lo=1, hi=MAX_NODE_GPUS, integer=True) or DEFAULT_NODE_GPUS)


def parse_gpu(rec: Record, kinds: dict[str, LinkKind] | None = None,
              fabrics: dict[str, Fabric] | None = None) -> GPU:
    rec.check_keys(("id", "name", "aliases", "vendor", "architecture", "compute_capability", "gfx_target",
                    "market", "vram_gib", "reported_vram", "memory_type", "mem_bw_gbps", "dense_tflops", "tdp_w",
                    "sm_count", "matmul_ceiling_tflops", "sustained_matmul_tflops", "interconnect", "runpod",
                    "announced", "source", "notes"))
    gpu_id = rec.text("id")
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", gpu_id):
        raise rec.fail("id", f"expected a slug of a-z, 0-9 and '-', got {gpu_id!r}")
    tf = rec.child("dense_tflops")
    tf.check_keys(COMPUTE_PATHS)
    rates = {p: tf.number(p, required=(p == "fp32"), lo=0.1, hi=20000) for p in COMPUTE_PATHS}
    ic = rec.child("interconnect", required=False) or Record(rec.path, rec.label, {})
    ic.check_keys(("pcie_gen", "pcie_unidir_gbps", "nvlink_unidir_gbps", "nvlink_peers", "pcie_p2p", "node_gpus",
                   "fabric", "link_source"))
    cc = rec.compute_capability("compute_capability", required=rec.data.get("vendor") == "NVIDIA")
    return GPU(
        id=gpu_id, name=rec.text("name"), aliases=rec.strings("aliases", required=False),
        vendor=rec.text("vendor", choices=("NVIDIA", "AMD")), architecture=rec.text("architecture"),
        compute_capability=cc, gfx_target=rec.text("gfx_target", required=False),
        market=rec.text("market", choices=MARKETS), vram_gib=rec.number("vram_gib", lo=1, hi=MAX_VRAM_GB),
        **_reported_vram(rec),
        memory_type=rec.text("memory_type"), mem_bw_gbps=rec.number("mem_bw_gbps", lo=10, hi=50000),
        fp32_tflops=rates["fp32"], tf32_tflops=rates["tf32"], fp16_tflops=rates["fp16"],
        bf16_tflops=rates["bf16"], fp8_tflops=rates["fp8"], int8_tops=rates["int8"],
        tdp_w=rec.number("tdp_w", required=False, lo=1, hi=5000),
        pcie_gen=ic.number("pcie_gen", required=False, lo=1, hi=7, integer=True),
        pcie_unidir_gbps=ic.number("pcie_unidir_gbps", required=False, lo=1, hi=1000),
        nvlink_unidir_gbps=ic.number("nvlink_unidir_gbps", required=False, lo=1, hi=10000),
        runpod=_runpod(rec), source=rec.text("source"), notes=rec.text("notes", required=False) or "",
        **_sm_count(rec), **_published_ceilings(rec, rates), **_sustained(rec, rates), **_announced(rec),
        links=_links(ic, kinds or load_link_kinds(), load_fabrics() if fabrics is None else fabrics, cc),
        node_gpus=_node_gpus(ic), link_source=ic.text("link_source", required=False) or "",
    )


def _check_names_unique(path: str, gpus: list[GPU]) -> None:
    owner: dict[str, str] = {}
    for gpu in gpus:
        for name in _names_of(gpu):
            if owner.setdefault(name, gpu.id) != gpu.id:
                raise DataFileError(path, f"'{gpu.id}'", "aliases",
                                    f"name '{name}' is also a name of '{owner[name]}'")


CPU_CEILING = ("base-clock peak of data/cpus.yaml (cores x GHz x FMA lanes, or the extension's rate): the runtime's "
               "CPU compute fraction (data/runtimes.yaml) carries what PyTorch reaches there")


def cpu_device(spec: CpuSpec) -> GPU:
    """A catalog CPU as a device: its peaks per path, DRAM bandwidth and host RAM (planner.inputs.cpus)."""
    return GPU(id=spec.id, name=spec.name, aliases=spec.aliases, vendor=spec.vendor, architecture=spec.architecture,
               compute_capability=None, gfx_target=None, market=spec.market, vram_gib=spec.memory_gib,
               memory_type=spec.memory_type, mem_bw_gbps=spec.mem_bw_gbps,
               **{_PEAK_FIELD[p]: spec.peak_tflops(p) for p in COMPUTE_PATHS}, tdp_w=spec.tdp_w, pcie_gen=None,
               pcie_unidir_gbps=None, nvlink_unidir_gbps=None, runpod=None, source=spec.source,
               notes=f"{spec.notes} Host RAM: {spec.memory_config}.".strip(), kind="cpu", cpu=spec,
               reported_vram_mib=None, reported_vram_source="",
               ceilings=tuple((p, Ceiling(spec.peak_tflops(p), 1.0, CPU_CEILING)) for p in COMPUTE_PATHS
                              if spec.peak_tflops(p) is not None))


def _published_ratios(gpus: list[GPU]) -> dict[str, list[tuple[GPU, float, float]]]:
    """Per family: (gpu, measured TFLOPS, measured / datasheet peak) of every GPU with a published figure."""
    out: dict[str, list[tuple[GPU, float, float]]] = {f: [] for f in CEILING_FAMILIES}
    for g in gpus:
        for fam, tflops in g.published_ceilings:
            out[fam].append((g, tflops, tflops / _peak(g, fam)))
    return out


def _peak(g: GPU, fam: str) -> float:
    """The datasheet rate a family's measured figure is set against (bf16, or fp16 on a GPU without bf16)."""
    return g.peak_tflops(_family_path(fam, {"bf16": g.bf16_tflops})) or 0.0


def _median_of(rows: list[tuple[GPU, float, float]], what: str) -> tuple[float, str]:
    ratio = statistics.median(r for _, _, r in rows)
    inputs = ", ".join(f"{g.id} {t:g}/{t / r:g} = {r:.3f}" for g, t, r in rows)
    return ratio, f"median measured/datasheet ratio {ratio:.3f} of {what} ({inputs})"


def _power_class(g: GPU) -> str:
    """'consumer' (GeForce: rated at a boost clock the cards run above under load, with the power to hold it) or
    'professional' (data-center and workstation parts, capped at their board power below their boost clock): every
    measured GeForce card of data/gpus.yaml reaches 1.00-1.14 of its datasheet matmul rate, every other 0.45-0.87."""
    return "consumer" if g.market == "consumer" else "professional"


def _family_ratio(g: GPU, fam: str, pub: dict[str, list[tuple[GPU, float, float]]]) -> tuple[float, str]:
    """(ceiling / datasheet, how) for one family on one GPU, by the documented rule (docs/SCHEMAS.md):
    1. its own published figure; 2. the median ratio of the same vendor, architecture and power class (_power_class),
    else of the same vendor and architecture; 3. an 8-bit path with neither takes the GPU's 16-bit ratio; 4. the
    median ratio of the vendor's GPUs of its power class, else of the vendor's, else of all."""
    own = [r for r in pub[fam] if r[0].id == g.id]
    if own:
        _, tflops, ratio = own[0]
        return ratio, (f"measured: {tflops:g} TFLOPS {_family_path(fam, {'bf16': g.bf16_tflops})} matmul = "
                       f"{ratio:.3f} x datasheet; {g.ceiling_source}")
    cls = _power_class(g)
    arch = [r for r in pub[fam] if r[0].vendor == g.vendor and r[0].architecture == g.architecture]
    same = [r for r in arch if _power_class(r[0]) == cls]
    if arch:
        ratio, why = _median_of(same or arch, f"{g.vendor} {g.architecture} GPUs" + (f" ({cls})" if same else "")
                                + f" in {fam}")
        return ratio, f"derived: {why}"
    if fam != "bf16":
        ratio, why = _family_ratio(g, "bf16", pub)
        return ratio, f"derived: no {fam} figure for {g.architecture}, so the GPU's 16-bit ratio ({why})"
    vendor = [r for r in pub[fam] if r[0].vendor == g.vendor]
    pool = [r for r in vendor if _power_class(r[0]) == cls] or vendor or pub[fam]
    if not pool:  # a catalog with no published figure at all (one's own file): the datasheet, said so
        return 1.0, "datasheet peak: no GPU in this catalog has a published matmul ceiling"
    ratio, why = _median_of(pool, f"{g.vendor} {cls} GPUs with a published {fam} figure (none of {g.architecture})")
    return ratio, f"derived: {why}"


def _ceiling_family(g: GPU, path: str, pub: dict[str, list[tuple[GPU, float, float]]]) -> str:
    """The family whose ratio (and clocks) time `path` on `g`: CEILING_FAMILY's, except that fp32 takes the 16-bit
    family where no GPU of g's vendor and architecture has a published SGEMM figure (SGEMM_FAMILY)."""
    fam = CEILING_FAMILY[path]
    if fam == SGEMM_FAMILY and not any(r[0].vendor == g.vendor and r[0].architecture == g.architecture
                                       for r in pub[fam]):
        return "bf16"
    return fam


def _borrows_16bit_ratio(g: GPU, fam: str, pub: dict[str, list[tuple[GPU, float, float]]]) -> bool:
    """Whether `_family_ratio` times an 8-bit family on `g` at the GPU's 16-bit ratio (its rule 3: no 8-bit figure of
    its own or of its vendor and architecture, e.g. int8 on an A100): the same tensor cores at the same board power,
    so the 16-bit family's power-saturated clock (SUSTAINED_RULE) holds for it as well."""
    return fam == "fp8" and not any(r[0].vendor == g.vendor and r[0].architecture == g.architecture for r in pub[fam])


def derive_ceilings(gpus: list[GPU]) -> list[GPU]:
    """Each GPU with a Ceiling for every compute path it has: the published measured figure of its family, or the
    datasheet peak times the family ratio of `_family_ratio`'s rule."""
    pub = _published_ratios(gpus)
    out = []
    for g in gpus:
        ratios = {fam: _family_ratio(g, fam, pub) for fam in CEILING_FAMILIES}
        clocks = {fam: _sustained_fraction(g, fam, _peak(g, fam) * ratios[fam][0], gpus) for fam in CEILING_FAMILIES}
        for fam in CEILING_FAMILIES:  # an 8-bit path timed at the 16-bit ratio (rule 3) runs at the 16-bit clock too
            if _borrows_16bit_ratio(g, fam, pub) and clocks[fam][0] == 1.0:
                clocks[fam] = clocks["bf16"]
        ceilings = []
        for path in COMPUTE_PATHS:
            peak = g.peak_tflops(path)
            if peak is None:
                continue
            fam = _ceiling_family(g, path, pub)
            ratio, how = ratios[fam]
            if fam != path:
                how = f"{how}; {path} takes its {fam}-family ratio"
            fraction, held = clocks[fam]
            if fraction < 1.0:
                ceilings.append((path, Ceiling(peak * ratio * fraction, ratio * fraction, f"{how}; {held}",
                                               burst_tflops=peak * ratio)))
            else:
                ceilings.append((path, Ceiling(peak * ratio, ratio, how)))
        out.append(replace(g, ceilings=tuple(ceilings)))
    return out


# Which ceiling the engine times a GPU's matmuls at. The published best-shape figures (mamf-finder's MAMF) are short
# bursts at the boost clock, on shapes that draw well below the board power; a dense GEMM that fills the SMs for long (a
# training step, a prefill, any benchmark loop) draws the full board power and runs at the clock that settles there:
# mamf-finder's MSMF, 'the number that matches sustained training throughput' (stas00/ml-engineering
# compute/accelerator/README.md on branch fast-mamf @082816f, 2026-08-10: H200 SXM bf16 MAMF 841.9 @ 1980 MHz, MSMF
# 708.5 @ ~1465 MHz, ~693 W; B200 1770.9 @ 1965 MHz, 1456.3 @ ~1339 MHz, ~994 W; the A100 has no MSMF: its pair is an
# 8192^3 cuBLAS matmul at the 400 W limit on randn inputs, 257, and on zeros, 295, the same kernel below the limit at
# the boost clock: Horace He, thonking.ai 'Strangely, Matrix Multiplications ... "Predictable" Data!', 2024). This
# project's own benches agree (planner/data/calibrations: 8192^3 bf16 matmuls, 102 runs, H200 671.8, H100 SXM 672.9
# TFLOPS; the burst figure is 794.5); the A100 pair carries to the 300 W / 250 W PCIe A100s, the A800 and the A30
# (Ampere, 8.0, at no more than 400 W). Every job the planner times is such a loop, so the sustained ceiling is the one
# it uses; no source gives a shorter burst regime a planner job could be in. The sustained/burst ratio of one run
# carries to a GPU of the same vendor, architecture, compute capability (SM design: B200's 10.0 is not the RTX PRO
# 6000's 12.0) and power class whose ceiling is a burst figure (its own, `burst: true`, or derived from them) at a board
# power not above the measured one's (H100 SXM, H800, H100 NVL from H200): its clock settles no higher. A higher board
# power settles higher, so no ratio is carried there (GB200 1200 W; B300, GB300 are Blackwell Ultra: named in
# validation/REPORT.md); a GPU whose own figure is not a burst (a square-matrix torch.matmul sweep: H100 PCIe, H20,
# L40S) keeps it.
SUSTAINED_RULE = ("sustained: the ceiling a long compute-bound load holds at its board power (mamf-finder MSMF), not "
                  "the short boost-clock burst (MAMF)")


def _sustained_fraction(g: GPU, fam: str, ceiling_tflops: float, gpus: list[GPU]) -> tuple[float, str]:
    """(sustained / burst ceiling, how) of a family on one GPU (SUSTAINED_RULE): its own power-saturated figure over
    its ceiling; else, unless its own figure is not a burst, the same-run ratio of a GPU of the same vendor,
    architecture, compute capability and power class at no lower board power; else (1.0, '')."""
    own = {f: (s, b) for f, s, b in g.sustained_ceilings}
    if fam in own and ceiling_tflops > 0:
        sustained, burst = own[fam]
        return (min(1.0, sustained / ceiling_tflops),
                f"{SUSTAINED_RULE}: measured {sustained:g} TFLOPS {fam} power-saturated (burst {burst:g} in the same "
                f"run; the burst ceiling here {ceiling_tflops:.4g}); {g.sustained_source}")
    own_held = any(f == fam for f, _ in g.published_ceilings) and not g.ceiling_burst
    if g.tdp_w is None or own_held:  # its own figure is already a long matmul's (no burst to scale)
        return 1.0, ""
    for sib in gpus:
        same = (sib.id != g.id and sib.vendor == g.vendor and sib.architecture == g.architecture
                and sib.compute_capability == g.compute_capability and _power_class(sib) == _power_class(g)
                and sib.tdp_w is not None and g.tdp_w <= sib.tdp_w)
        pair = next(((s, b) for f, s, b in sib.sustained_ceilings if f == fam), None) if same else None
        if pair:
            return (pair[0] / pair[1],
                    f"{SUSTAINED_RULE}: derived, {sib.id}'s {fam} {pair[0]:g} / {pair[1]:g} = {pair[0] / pair[1]:.3f} "
                    f"of the burst ceiling {ceiling_tflops:.4g} ({g.architecture}, {g.tdp_w:g} W board power, not "
                    f"above {sib.id}'s {sib.tdp_w:g} W: its clock settles no higher); {sib.sustained_source}")
    return 1.0, ""


def _protocol_shares(path: str | Path, records: list) -> dict[str, tuple[float, tuple]]:
    """NCCL's protocols (the file's `protocols`, each with its source): id -> (share of the bus bandwidth, LL's caps
    by generation)."""
    parsed = []
    for i, raw in enumerate(records):
        rec = Record.of(path, i, raw)
        rec.check_keys(("id", "busbw_share", "max_busbw_gbps", "source"))
        caps = rec.child("max_busbw_gbps", required=False)
        steps = ()
        if caps is not None:
            steps = tuple(sorted((parse_compute_capability(k, lambda why, k=k, caps=caps: caps.fail(k, why)),
                                  caps.number(k, lo=1.0, hi=100000.0)) for k in caps.data))
        rec.text("source")  # required: each figure names where it comes from (read for its check only)
        parsed.append((rec.text("id", choices=PROTOCOLS), rec.number("busbw_share", lo=0.05, hi=1.0), steps))
    unique_ids(path, (pid for pid, _, _ in parsed))
    out = {pid: (share, steps) for pid, share, steps in parsed}
    for needed in PROTOCOLS:
        if needed not in out:
            raise DataFileError(path, "protocols", "id", f"no protocol '{needed}' (needed: {', '.join(PROTOCOLS)})")
    return out


def _link_protocols(rec: Record, shares: dict[str, tuple[float, tuple]]) -> tuple[LinkProtocol, ...]:
    """A link kind's `protocols`: each protocol's call and hop latencies, joined with its bandwidth share."""
    sub = rec.child("protocols")
    sub.check_keys(PROTOCOLS)
    out = []
    for pid in PROTOCOLS:
        lat = sub.child(pid, required=pid in REQUIRED_PROTOCOLS)
        if lat is None:
            continue
        lat.check_keys(("call_latency_us", "hop_latency_us"))
        share, caps = shares[pid]
        out.append(LinkProtocol(pid, share, lat.number("call_latency_us", lo=0.0, hi=1000),
                                lat.number("hop_latency_us", lo=0.05, hi=1000), caps))
    return tuple(out)


def _hop_added(rec: Record) -> tuple[tuple[tuple[int, int], float], ...]:
    """A link kind's optional `hop_latency_added_us`: compute capability ("8.0") -> microseconds a ring hop takes
    beyond NCCL's model between GPUs of that generation (measured; see the file's source)."""
    sub = rec.child("hop_latency_added_us", required=False)
    if sub is None:
        return ()
    return tuple(sorted((parse_compute_capability(k, lambda why, k=k: sub.fail(k, why)),
                         sub.number(k, lo=0.0, hi=100.0)) for k in sub.data))


@lru_cache(maxsize=4)
def load_link_kinds(path: str | Path = LINKS_FILE) -> dict[str, LinkKind]:
    """The link kinds of data/interconnects.yaml by id, each with NCCL's protocols over it; each of nvlink,
    pcie-p2p and pcie-host must be there."""
    sections = load_sections(path, ("protocols", "links"), dated=True)
    shares = _protocol_shares(path, sections["protocols"])
    parsed = []
    for i, raw in enumerate(sections["links"]):
        rec = Record.of(path, i, raw)
        rec.check_keys(("id", "name", "busbw_fraction", "protocols", "hop_latency_added_us", "source"))
        parsed.append(LinkKind(rec.text("id"), rec.text("name"), rec.number("busbw_fraction", lo=0.05, hi=1.0),
                               _link_protocols(rec, shares), rec.text("source"), _hop_added(rec)))
    unique_ids(path, (k.id for k in parsed))
    kinds = {k.id: k for k in parsed}
    for needed in REQUIRED_LINKS:
        if needed not in kinds:
            raise DataFileError(path, "links", "id", f"no link kind '{needed}' (needed: {', '.join(REQUIRED_LINKS)})")
    return kinds


FABRIC_PROTOCOLS = ("ll", "ll128", "simple")  # a fabric gives NCCL's network step latency for each


@lru_cache(maxsize=4)
def load_fabrics(path: str | Path = LINKS_FILE) -> dict[str, Fabric]:
    """The network fabrics between nodes of data/interconnects.yaml by id."""
    out = []
    for i, raw in enumerate(load_sections(path, ("fabrics",), dated=True)["fabrics"]):
        rec = Record.of(path, i, raw)
        rec.check_keys(("id", "name", "gbits_per_gpu", "busbw_fraction", "hop_latency_us", "net_overhead_us",
                        "ll_max_busbw_gbps", "source"))
        hops = rec.child("hop_latency_us")
        hops.check_keys(FABRIC_PROTOCOLS)
        caps = rec.child("ll_max_busbw_gbps")
        caps.check_keys(("two_nodes", "more_nodes"))
        out.append(Fabric(rec.text("id"), rec.text("name"), rec.number("gbits_per_gpu", lo=1, hi=10000),
                          rec.number("busbw_fraction", lo=0.05, hi=1.0),
                          tuple((p, hops.number(p, lo=0.05, hi=1000)) for p in FABRIC_PROTOCOLS),
                          rec.number("net_overhead_us", lo=0.0, hi=100), caps.number("two_nodes", lo=0.1, hi=10000),
                          caps.number("more_nodes", lo=0.1, hi=10000), rec.text("source")))
    unique_ids(path, (f.id for f in out))
    return {f.id: f for f in out}


@lru_cache(maxsize=8)
def load_catalog(path: str | Path = GPUS_FILE, cpus_path: str | Path = CPUS_FILE) -> Catalog:
    """Load and validate the GPU catalog and the CPU devices (cached per paths; the result is immutable)."""
    records = load_yaml(path, "gpus", dated=True)
    kinds, fabrics = load_link_kinds(), load_fabrics()
    gpus = derive_ceilings([parse_gpu(Record.of(path, i, r), kinds, fabrics) for i, r in enumerate(records)])
    unique_ids(path, (g.id for g in gpus))
    cpus = [cpu_device(c) for c in load_cpu_specs(cpus_path, COMPUTE_PATHS)]
    unique_ids(cpus_path, (g.id for g in gpus + cpus))
    _check_names_unique(str(path), gpus)
    _check_names_unique(str(cpus_path), gpus + cpus)
    return Catalog(tuple(gpus), str(path), tuple(cpus))
