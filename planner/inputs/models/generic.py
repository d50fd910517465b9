"""Models described by formulas in their input size L (axial attention, invariant point attention, ...)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from planner.base import expressions
from planner.base.schema import MAX_NOTE_CHARS, CachedHash, Record
from planner.base.units import BYTES_PER_GB, FP32_BYTES
from planner.inputs.work import (EAGER_KERNELS_PER_FUSED, Collective, MemoryItem, OpGroup, Setup, dequant_groups,
                                 forward_equivalents)

FIELDS = ("id", "name", "kind", "input_size_name", "default_input_size", "constants", "params",
          "fwd_flops_per_sample", "activation_elems_per_sample", "attention_score_elems_per_sample",
          "peak_inference_elems_per_sample", "peak_inference_score_elems_per_sample",
          "activation_traffic_elems_per_sample", "kernels_per_forward", "checkpoint_segments",
          "checkpoint_kept_elems_per_sample", "checkpoint_segment_elems_per_sample", "checkpoint_peaks",
          "autocast_bytes_per_saved_elem", "derivation", "source", "cross_check")
MAX_CONSTANTS = 200  # named constants in one profile (the presets use under 20); each formula evaluation copies them
TRAIN_WEIGHT_READS = 3  # a training micro-step reads the weights in forward, backward-input, backward-weight
# Bytes per element of a tensor live at a checkpointed peak, by its dtype. 'compute' is the activation dtype (16 bits
# under mixed precision, fp32 otherwise); 'autocast_copy' is the 16-bit copy autocast makes of an fp32 tensor for a
# matmul (none in fp32 training, where the matmul reads the fp32 tensor itself); both come from the precision.
FIXED_DTYPE_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "bool": 1.0, "int64": 8.0}
DTYPES = (*FIXED_DTYPE_BYTES, "compute", "autocast_copy")
MAX_PEAKS, MAX_PEAK_TENSORS = 8, 40  # moments, tensors per moment (BetaRho uses 2 and 14)


@dataclass(frozen=True)
class PeakTensor:
    """Tensors live at a checkpointed peak, per sample: what they are, how many elements (an expression in L) and
    their dtype (a key of FIXED_DTYPE_BYTES, 'compute' or 'autocast_copy')."""

    what: str
    elems_expr: str
    dtype: str


@dataclass(frozen=True)
class CheckpointPeak:
    """One candidate peak moment of a checkpointed training step (`at`, e.g. the last block's backward) and every
    tensor live then: kept inputs, what un-checkpointed code saved, the recomputed segment, gradients in flight."""

    at: str
    tensors: tuple[PeakTensor, ...]


def dtype_bytes(dtype: str, act_bytes: float) -> float:
    """Bytes per element of a peak tensor when activations are `act_bytes` wide (4: fp32 training)."""
    if dtype == "compute":
        return act_bytes
    if dtype == "autocast_copy":
        return act_bytes if act_bytes < FP32_BYTES else 0.0
    return FIXED_DTYPE_BYTES[dtype]


@dataclass(frozen=True, eq=True)
class GenericProfile(CachedHash):
    """A model described by formulas in the input size L (axial attention, IPA, ...)."""

    __hash__ = CachedHash.__hash__  # dataclass would otherwise regenerate it

    id: str
    name: str
    input_size_name: str
    default_input_size: int
    constants: tuple[tuple[str, float], ...]
    params_expr: str
    fwd_flops_expr: str
    activation_elems_expr: str
    attention_score_elems_expr: str
    peak_inference_elems_expr: str
    peak_inference_score_elems_expr: str
    activation_traffic_elems_expr: str
    eager_kernels_per_forward: int  # ATen ops one eager forward dispatches (the YAML's kernels_per_forward)
    derivation: str
    source: str
    checkpoint_segments_expr: str = "1"  # blocks activation checkpointing splits the model into
    # With checkpointing: elements live for the whole step (the input saved at every checkpoint boundary, everything
    # outside the checkpointed blocks) and the largest segment re-materialized in backward. '' = not given.
    checkpoint_kept_expr: str = ""
    checkpoint_segment_expr: str = ""
    # Bytes per saved activation element in mixed-precision training (norms, softmax and fp32 residual streams stay
    # fp32 under autocast, so the average is above 2); None = the precision's activation bytes.
    autocast_bytes_per_saved_elem: float | None = None
    # Instead of kept + segment: the candidate peak moments, each tensor at its own dtype; memory is the largest.
    checkpoint_peaks: tuple[CheckpointPeak, ...] = ()
    cross_check: str = ""
    kind: str = field(default="generic", init=False)

    # ------------------------------------------------------------ the model protocol: what it is
    can_generate = False
    counts_tokens = False
    trained_context = None
    tensor_parallel_heads = None  # no tensor-parallel split is modelled for a formula profile
    tp_projections_per_gather = 1.0  # (nor its gathers)
    shard_units = 1  # FSDP gathers the whole model at once

    @property
    def shard_unit_params(self) -> int:
        return self.params

    @property
    def active_params(self) -> int:
        return self.params  # formulas describe dense models: every parameter is used

    @property
    def quantizable_params(self) -> int:
        return self.params  # formulas don't say which weights are embeddings: all count as quantized

    def quantized_params(self, scope: str) -> int:
        return self.params  # nor which are experts: any scope quantizes all, as the work formulas count them

    @property
    def kernels_per_forward(self) -> float:
        """The profile counts eager ATen ops; in fused-block units, as the runtimes' factors expect."""
        return self.eager_kernels_per_forward / EAGER_KERNELS_PER_FUSED

    @property
    def attention_head_dim(self) -> int | None:
        """The constant `head_dim`, when the profile names one (attention kernels cap it)."""
        value = dict(self.constants).get("head_dim")
        return int(value) if value else None

    def architecture(self) -> dict[str, Any] | None:
        return None  # formulas, not editable fields: the profile's YAML is the description

    def describe(self) -> str:
        return f"generic profile · input size {self.input_size_name}"

    def listing(self) -> dict[str, int | None]:
        return {"layers": None, "hidden": None, "context": self.default_input_size}

    # ------------------------------------------------------------ formulas
    def _eval(self, expr: str, size: float | None = None) -> float:
        variables = dict(self.constants)
        if size is not None:
            variables["L"] = float(size)
        return expressions.evaluate(expr, variables)

    @property
    def params(self) -> int:
        return int(round(self._eval(self.params_expr)))

    def fwd_flops(self, size: float) -> float:
        return self._eval(self.fwd_flops_expr, size)

    def activation_elems(self, size: float) -> float:
        return self._eval(self.activation_elems_expr, size)

    def attention_score_elems(self, size: float) -> float:
        return self._eval(self.attention_score_elems_expr, size)

    def peak_inference_elems(self, size: float) -> float:
        return self._eval(self.peak_inference_elems_expr, size)

    def peak_inference_score_elems(self, size: float) -> float:
        return self._eval(self.peak_inference_score_elems_expr, size)

    def activation_traffic_elems(self, size: float) -> float:
        return self._eval(self.activation_traffic_elems_expr, size)

    def check_size(self, size: int) -> None:
        """Every formula must be finite and non-negative at the size a plan uses, and memory must not shrink as the
        size grows (from the default size to this one); ValueError naming the field otherwise."""
        sized = (("fwd_flops_per_sample", self.fwd_flops_expr, False),
                 ("activation_elems_per_sample", self.activation_elems_expr, True),
                 ("attention_score_elems_per_sample", self.attention_score_elems_expr, True),
                 ("peak_inference_elems_per_sample", self.peak_inference_elems_expr, True),
                 ("peak_inference_score_elems_per_sample", self.peak_inference_score_elems_expr, True),
                 ("activation_traffic_elems_per_sample", self.activation_traffic_elems_expr, False),
                 *((("checkpoint_kept_elems_per_sample", self.checkpoint_kept_expr, True),
                    ("checkpoint_segment_elems_per_sample", self.checkpoint_segment_expr, True))
                   if self.checkpoint_kept_expr else ()),
                 *((f"checkpoint_peaks ({peak.at}: {t.what})", t.elems_expr, True)
                   for peak in self.checkpoint_peaks for t in peak.tensors))
        lo, hi = sorted((size, self.default_input_size))
        for name, expr, memory in sized:
            try:
                at = self._eval(expr, size)
                smaller, larger = (self._eval(expr, lo), self._eval(expr, hi)) if memory else (0.0, 0.0)
            except expressions.ExpressionError as exc:
                raise ValueError(f"{self.name}: {name} at {self.input_size_name}={size:,}: {exc}") from None
            if at < 0:
                raise ValueError(f"{self.name}: {name} is negative at {self.input_size_name}={size:,}; fix the formula")
            if larger < smaller:
                raise ValueError(f"{self.name}: {name} shrinks from {self.input_size_name}={lo:,} to {hi:,}; memory "
                                 "can't fall as the input grows: fix the formula")

    @property
    def checkpoint_segments(self) -> float:
        return max(1.0, self._eval(self.checkpoint_segments_expr))

    # ------------------------------------------------------------ the model protocol: work per step
    def _groups(self, s: Setup, batch: int, size: int, fwd_factor: float) -> tuple[OpGroup, ...]:
        m, p = self, s.precision
        flops = fwd_factor * batch * m.fwd_flops(size)
        w_bytes = m.params * p.weight_bytes * (1 if fwd_factor == 1 else TRAIN_WEIGHT_READS)
        act = fwd_factor * batch * m.activation_traffic_elems(size) * p.act_bytes
        scores = (2 * fwd_factor * batch * m.attention_score_elems(size) * p.act_bytes
                  if s.attention.scores_materialized else 0.0)
        return (
            OpGroup("matmuls (all layers)", flops, w_bytes, p.compute_path,
                    f"FLOPs = {fwd_factor:g} x batch x fwd_flops(L) [{m.fwd_flops_expr}]; "
                    f"bytes = params x {p.weight_bytes:g} B; GEMM shapes not known: the matmul ceiling unshaped"),
            *dequant_groups(m.params, s),
            OpGroup("elementwise & attention traffic", 0.0, act + scores, s.attention_path,
                    f"bytes = {fwd_factor:g} x batch x traffic(L) [{m.activation_traffic_elems_expr}] "
                    f"x {p.act_bytes:g} B"
                    + (" + score matrices (manual attention)" if scores else "")),
        )

    def forward_work(self, s: Setup, batch: int, size: int) -> tuple[OpGroup, ...]:
        return self._groups(s, batch, size, 1.0)

    def train_work(self, s: Setup, batch: int, size: int, checkpointing: bool) -> tuple[OpGroup, ...]:
        return self._groups(s, batch, size, forward_equivalents(checkpointing))

    def prefill_work(self, s: Setup, batch: int, prompt: int) -> tuple[OpGroup, ...]:
        raise ValueError(f"{self.name} is a generic profile: it has no prefill (use infer or train)")

    def decode_work(self, s: Setup, batch: int) -> tuple[OpGroup, ...]:
        raise ValueError(f"{self.name} is a generic profile: it cannot generate (use infer or train)")

    def context_parallel_comm(self, s: Setup, tokens: int) -> tuple[Collective, ...]:
        """Context parallel is modelled for decoders only."""
        return ()

    def tensor_parallel_comm(self, s: Setup, tokens: int, logits_rows: int,
                             rounds: int = 1) -> tuple[Collective, ...]:
        return ()

    # ------------------------------------------------------------ the model protocol: memory
    def inference_memory(self, s: Setup, batch: int, size: int) -> tuple[MemoryItem, ...]:
        L, p = size, s.precision
        elems = self.peak_inference_elems(L) + (self.peak_inference_score_elems(L)
                                                if s.attention.scores_materialized else 0)
        return (MemoryItem("activations", batch * elems * p.act_bytes / BYTES_PER_GB,
                           "batch {} x peak_inference_elems(L={}) x {:g} B", (batch, L, p.act_bytes)),)

    def generate_memory(self, s: Setup, batch: int, prompt: int, gen: int) -> tuple[MemoryItem, ...]:
        raise ValueError(f"{self.name} is a generic profile: it cannot generate (use infer or train)")

    def saved_elem_bytes(self, s: Setup) -> float:
        """Bytes per saved activation element in training: the profile's autocast average under mixed precision."""
        p = s.precision
        if p.act_bytes < FP32_BYTES and self.autocast_bytes_per_saved_elem is not None:
            return self.autocast_bytes_per_saved_elem
        return p.act_bytes

    def _checkpointed_elems(self, L: int, scores: float) -> tuple[float, str]:
        """Elements saved per sample with activation checkpointing, and how they were counted."""
        n = self.checkpoint_segments
        if self.checkpoint_kept_expr and self.checkpoint_segment_expr:
            kept, seg = self._eval(self.checkpoint_kept_expr, L), self._eval(self.checkpoint_segment_expr, L)
            return kept + seg + scores / n, (f"(kept(L={L}) [{self.checkpoint_kept_expr}] + one segment "
                                             f"[{self.checkpoint_segment_expr}]"
                                             + (f" + scores / {n:g}" if scores else "") + ")")
        # The profile says nothing of what stays saved: divide by the segments, a lower bound (block inputs ignored)
        return (self.activation_elems(L) + scores) / n, (
            f"activation_elems(L={L}) / {n:g} checkpointed segments (a lower bound: the profile gives no "
            "checkpoint_kept_elems_per_sample, so the inputs saved at every block are not counted)")

    def checkpoint_peak_bytes(self, L: int, act_bytes: float) -> tuple[float, CheckpointPeak]:
        """Bytes per sample at the largest of the profile's checkpointed peak moments, and that moment."""
        totals = [(sum(self._eval(t.elems_expr, L) * dtype_bytes(t.dtype, act_bytes) for t in peak.tensors), peak)
                  for peak in self.checkpoint_peaks]
        return max(totals, key=lambda tp: tp[0])

    def train_logits_bytes(self, batch: int, size: int) -> float:
        return 0.0  # a formula profile's activations do not name its loss's share

    def train_activation_memory(self, s: Setup, batch: int, size: int, checkpointing: bool) -> MemoryItem:
        L, nbytes = size, self.saved_elem_bytes(s)
        scores = self.attention_score_elems(L) if s.attention.scores_materialized else 0.0
        if checkpointing and self.checkpoint_peaks:
            peak_bytes, peak = self.checkpoint_peak_bytes(L, s.precision.act_bytes)
            n = self.checkpoint_segments
            per = peak_bytes + scores / n * nbytes
            return MemoryItem("activations", batch * per / BYTES_PER_GB,
                              "batch {} x {:,.0f} B per sample at the checkpointed peak ({}, L={}; each tensor at its "
                              "own dtype){}", (batch, per, peak.at, L,
                                               f", incl. scores / {n:g} x {nbytes:g} B" if scores else ""))
        if checkpointing:
            per, how = self._checkpointed_elems(L, scores)
        else:
            per, how = self.activation_elems(L) + scores, f"activation_elems(L={L})" + (" + scores" if scores else "")
        return MemoryItem("activations", batch * per * nbytes / BYTES_PER_GB, "batch {} x {} x {:g} B",
                          (batch, how, nbytes))


def _formula(rec: Record, fld: str, names: set[str], required: bool = True, default: str = "0") -> str:
    raw = rec.raw(fld, required)
    if raw is None:
        return default
    text = str(raw)
    try:
        unknown = expressions.names(text) - names
    except expressions.ExpressionError as exc:
        raise rec.fail(fld, str(exc)) from None
    if unknown:
        raise rec.fail(fld, f"unknown name(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(names))}")
    return text


def _peaks(rec: Record, names: set[str]) -> tuple[CheckpointPeak, ...]:
    """The optional checkpoint_peaks list: moments {at, tensors: [{tensor, elems, dtype}]}."""
    if rec.raw("checkpoint_peaks", required=False) is None:
        return ()
    peaks = []
    for moment in rec.records("checkpoint_peaks", MAX_PEAKS):
        moment.check_keys(("at", "tensors"))
        tensors = []
        for t in moment.records("tensors", MAX_PEAK_TENSORS):
            t.check_keys(("tensor", "elems", "dtype"))
            tensors.append(PeakTensor(t.text("tensor", max_len=MAX_NOTE_CHARS), _formula(t, "elems", names),
                                      t.text("dtype", choices=DTYPES)))
        peaks.append(CheckpointPeak(moment.text("at", max_len=MAX_NOTE_CHARS), tuple(tensors)))
    return tuple(peaks)


def parse_generic(rec: Record) -> GenericProfile:
    rec.check_keys(FIELDS)
    consts_rec = rec.child("constants", required=False)
    constants = {}
    if consts_rec and len(consts_rec.data) > MAX_CONSTANTS:
        raise rec.fail("constants", f"{len(consts_rec.data):,} constants; at most {MAX_CONSTANTS} are accepted")
    for key in (consts_rec.data if consts_rec else ()):
        constants[str(key)] = consts_rec.number(str(key), lo=-1e15, hi=1e15)
    if "L" in constants:
        raise rec.fail("constants", "'L' is the input size and cannot be a constant")
    with_l = set(constants) | {"L"}
    profile = GenericProfile(
        id=rec.text("id"), name=rec.text("name"), input_size_name=rec.text("input_size_name"),
        default_input_size=rec.number("default_input_size", lo=1, hi=10**7, integer=True),
        constants=tuple(sorted(constants.items())), params_expr=_formula(rec, "params", set(constants)),
        fwd_flops_expr=_formula(rec, "fwd_flops_per_sample", with_l),
        activation_elems_expr=_formula(rec, "activation_elems_per_sample", with_l),
        attention_score_elems_expr=_formula(rec, "attention_score_elems_per_sample", with_l, required=False),
        peak_inference_elems_expr=_formula(rec, "peak_inference_elems_per_sample", with_l),
        peak_inference_score_elems_expr=_formula(rec, "peak_inference_score_elems_per_sample", with_l, required=False),
        activation_traffic_elems_expr=_formula(rec, "activation_traffic_elems_per_sample", with_l),
        eager_kernels_per_forward=rec.number("kernels_per_forward", lo=1, hi=10**6, integer=True),
        derivation=rec.text("derivation"), source=rec.text("source"),
        checkpoint_segments_expr=_formula(rec, "checkpoint_segments", set(constants), required=False, default="1"),
        checkpoint_kept_expr=_formula(rec, "checkpoint_kept_elems_per_sample", with_l, required=False, default=""),
        checkpoint_segment_expr=_formula(rec, "checkpoint_segment_elems_per_sample", with_l, required=False,
                                         default=""),
        autocast_bytes_per_saved_elem=rec.number("autocast_bytes_per_saved_elem", required=False, lo=1, hi=4),
        checkpoint_peaks=_peaks(rec, with_l),
        cross_check=rec.text("cross_check", required=False, max_len=MAX_NOTE_CHARS) or "",
    )
    if bool(profile.checkpoint_kept_expr) != bool(profile.checkpoint_segment_expr):
        raise rec.fail("checkpoint_kept_elems_per_sample", "give both checkpoint_kept_elems_per_sample and "
                       "checkpoint_segment_elems_per_sample, or neither")
    if profile.checkpoint_peaks and profile.checkpoint_kept_expr:
        raise rec.fail("checkpoint_peaks", "give checkpoint_peaks or the checkpoint_kept/segment pair, not both: "
                       "the peaks replace them")
    for fld, fn in (("params", lambda: profile.params),
                    ("fwd_flops_per_sample", lambda: profile.fwd_flops(profile.default_input_size)),
                    ("activation_elems_per_sample", lambda: profile.activation_elems(profile.default_input_size)),
                    ("peak_inference_elems_per_sample",
                     lambda: profile.peak_inference_elems(profile.default_input_size))):
        try:
            if fn() < 0:
                raise rec.fail(fld, "evaluates to a negative number at the default input size")
        except expressions.ExpressionError as exc:
            raise rec.fail(fld, str(exc)) from None
    return profile
