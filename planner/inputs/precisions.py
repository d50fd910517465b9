"""Precisions, KV-cache dtypes, attention backends and PyTorch build rules (data/precisions.yaml)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from planner import DATA_DIR
from planner.inputs.catalog import COMPUTE_PATHS
from planner.base.schema import Record, UnknownNameError, load_sections, suggest, unique_ids
from planner.base.units import FP32_BYTES

PRECISIONS_FILE = DATA_DIR / "precisions.yaml"


QUANTIZED_SCOPES = ("all", "layers")  # which weights a precision's weight_bytes applies to
MAX_DEQUANT_OPS = 64  # instructions per weight a dequantizing kernel may spend (4-bit formats need ~5)


@dataclass(frozen=True)
class Precision:
    """A numeric format: the tensor-core path matmuls run at, bytes per weight and per activation element.

    quantized_weights 'layers': weight_bytes applies to the transformer layers' matrices only; embeddings, LM head and
    norms stay in the activation dtype (AWQ, GPTQ, FP8 and W8A8 checkpoints). dequant_ops_per_weight: CUDA-core
    instructions a weight-only kernel spends unpacking and scaling each weight, once per weight per pass.
    """

    id: str
    compute_path: str
    weight_bytes: float
    act_bytes: float
    min_sm: tuple[int, int] | None
    note: str
    source: str
    quantized_weights: str = "all"
    dequant_ops_per_weight: float = 0.0

    @property
    def outside_weight_bytes(self) -> float:
        """Bytes per weight outside the quantized layers (embeddings, LM head, norms)."""
        if self.quantized_weights == "layers" and self.weight_bytes < self.act_bytes:
            return self.act_bytes
        return self.weight_bytes


@dataclass(frozen=True)
class KVDtype:
    id: str
    bytes: float
    min_sm: tuple[int, int] | None
    source: str


@dataclass(frozen=True)
class AttentionBackend:
    id: str
    name: str
    min_sm: tuple[int, int] | None
    scores_materialized: bool
    source: str


@dataclass(frozen=True)
class BuildRule:
    """A PyTorch build requirement for GPUs whose compute capability lies in [min_sm, max_sm]."""

    min_sm: tuple[int, int]
    max_sm: tuple[int, int]
    text: str
    source: str

    def applies(self, sm: tuple[int, int] | None) -> bool:
        return sm is not None and self.min_sm <= sm <= self.max_sm


@dataclass(frozen=True)
class PrecisionRules:
    precisions: tuple[Precision, ...]
    kv_dtypes: tuple[KVDtype, ...]
    attention_backends: tuple[AttentionBackend, ...]
    builds: tuple[BuildRule, ...]

    def _find(self, items, kind: str, name: str):
        for item in items:
            if item.id == name.lower():
                return item
        raise UnknownNameError(kind, name, suggest(name, [i.id for i in items]))

    def precision(self, name: str) -> Precision:
        return self._find(self.precisions, "precision", name)

    def kv_dtype(self, name: str) -> KVDtype:
        return self._find(self.kv_dtypes, "KV-cache dtype", name)

    def attention(self, name: str) -> AttentionBackend:
        return self._find(self.attention_backends, "attention backend", name)

    def default_kv_dtype(self, precision: Precision) -> KVDtype:
        """The KV cache is kept in the activation dtype unless chosen otherwise."""
        if precision.act_bytes == FP32_BYTES:
            return self.kv_dtype("fp32")
        return self.kv_dtype("bf16" if precision.id == "bf16" else "fp16")


@lru_cache(maxsize=4)
def load_rules(path: str | Path = PRECISIONS_FILE) -> PrecisionRules:
    doc = load_sections(path, ("precisions", "kv_dtypes", "attention_backends", "pytorch_builds"), dated=True)
    records = doc["precisions"]
    precisions = []
    for i, raw in enumerate(records):
        rec = Record.of(path, i, raw)
        rec.check_keys(("id", "compute_path", "weight_bytes", "act_bytes", "min_sm", "quantized_weights",
                        "dequant_ops_per_weight", "note", "source"))
        precisions.append(Precision(rec.text("id"), rec.text("compute_path", choices=COMPUTE_PATHS),
                                    rec.number("weight_bytes", lo=0.1, hi=8), rec.number("act_bytes", lo=1, hi=8),
                                    rec.compute_capability("min_sm", required=False), rec.text("note"),
                                    rec.text("source"),
                                    rec.text("quantized_weights", required=False, choices=QUANTIZED_SCOPES) or "all",
                                    rec.number("dequant_ops_per_weight", required=False, lo=0,
                                               hi=MAX_DEQUANT_OPS) or 0.0))
    unique_ids(path, (p.id for p in precisions))
    kvs = []
    for i, raw in enumerate(doc["kv_dtypes"]):
        rec = Record.of(path, i, raw)
        rec.check_keys(("id", "bytes", "min_sm", "source"))
        kvs.append(KVDtype(rec.text("id"), rec.number("bytes", lo=0.25, hi=8),
                           rec.compute_capability("min_sm", required=False), rec.text("source")))
    backends = []
    for i, raw in enumerate(doc["attention_backends"]):
        rec = Record.of(path, i, raw)
        rec.check_keys(("id", "name", "min_sm", "scores_materialized", "source"))
        backends.append(AttentionBackend(rec.text("id"), rec.text("name"),
                                         rec.compute_capability("min_sm", required=False),
                                         rec.flag("scores_materialized"), rec.text("source")))
    builds = []
    for i, raw in enumerate(doc["pytorch_builds"]):
        rec = Record.of(path, i, raw)
        rec.check_keys(("min_sm", "max_sm", "text", "source"))
        builds.append(BuildRule(rec.compute_capability("min_sm"), rec.compute_capability("max_sm"),
                                rec.text("text"), rec.text("source")))
    return PrecisionRules(tuple(precisions), tuple(kvs), tuple(backends), tuple(builds))
