"""Models traced from PyTorch code (`python -m planner profile`): measured work and memory as growth laws in L.

A traced profile holds, per sample (batch 1) at input size L, polynomials in L fitted to what the profiler measured on
fake tensors at several sizes: FLOPs and bytes per op group (linear layers, attention, elementwise & norms) for a
forward pass and a training step (plain and with activation checkpointing), kernels per step, and peak activation
memory (inference, training, training with checkpointing; fp32 and under bf16 autocast). Bytes were counted with
fp32 activations and weights; the precision of a plan scales them (weights by weight_bytes / 4, activations by
act_bytes / 4). The raw points travel with the laws, so a hand-edited file that contradicts itself is refused.

A batch of B samples: the profiler traces one sample, so a law's constant term (what doesn't grow with L: weight
gradients and their reads, the autocast weight copies, a tied embedding's summed gradient, buffers) counts once
per step, and the rest B times.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from planner.base.safe_parse import shown
from planner.base.schema import CachedHash, Record, check_number
from planner.base.units import BYTES_PER_GB, FP32_BYTES
from planner.inputs.work import (ATTENTION_GROUP, EAGER_KERNELS_PER_FUSED, Collective, dequant_groups, MemoryItem,
                                 OpGroup, Setup)

FIELDS = ("id", "kind", "name", "source", "input_size_name", "default_input_size", "params", "trace", "work",
          "kernels", "memory", "ops", "notes")
TRACE_FIELDS = ("torch_version", "date", "factory", "args", "sizes", "tolerance_pct", "seconds", "autocast")
STEPS = ("forward", "train", "train_checkpointed")  # traced steps, in the order the profiler runs them
GROUPS = ("linear layers", ATTENTION_GROUP, "elementwise & norms")  # op groups, as the profiler sorts aten ops
QUANTITIES = ("flops", "weight_bytes", "activation_bytes")  # per group and step; bytes at fp32
MEMORY = tuple(f"{m}_{d}" for m in ("inference", "train", "train_checkpointed") for d in ("fp32", "bf16"))
LAW_FIELDS = ("law", "coeffs", "points", "error_pct")
ENVELOPE_FIELDS = ("points", "error_pct", "pieces")
LAW_NAMES = ("constant", "linear", "quadratic", "cubic")  # degree 0..3 in L
MIN_SIZES, MAX_SIZES = 3, 12  # traced sizes in one profile (and pieces of one memory envelope)
MAX_ARGS = 32  # factory arguments recorded in the profile
MAX_OPS_LISTED = 20
MAX_TEXT = 20_000  # notes and other free text
AGREE_SLACK_PCT = 0.5  # a law may miss its own points by its stated error plus this (rounding in the file)
BF16_BYTES = 2  # the autocast trace's activation width


@dataclass(frozen=True)
class Law:
    """A quantity per sample as a polynomial in L, c0 + c1 L + c2 L^2 + c3 L^3, with the traced points it fits.

    When no polynomial reproduces the points (error_pct > 0: a model whose shapes aren't polynomial in L, like SEA's
    number of distinct edges, which saturates), the law goes through the traced points instead (straight lines in
    log-log between neighbours) and follows the polynomial beyond them, scaled to meet the nearest point."""

    coeffs: tuple[float, ...]
    points: tuple[float, ...]
    error_pct: float = 0.0  # largest relative miss of the polynomial at a traced point, percent
    sizes: tuple[int, ...] = ()  # the traced sizes of `points` (the profile's trace.sizes)

    @property
    def degree(self) -> int:
        return len(self.coeffs) - 1

    @property
    def name(self) -> str:
        return LAW_NAMES[self.degree]

    def poly(self, size: float) -> float:
        """The polynomial at input size `size` (Horner)."""
        total = 0.0
        for c in reversed(self.coeffs):
            total = total * size + c
        return total

    def at(self, size: float) -> float:
        """The quantity at input size `size`: the polynomial when it is exact, else through the traced points."""
        if self.error_pct == 0 or len(self.sizes) != len(self.points):
            return self.poly(size)
        s, p = self.sizes, self.points
        if size <= s[0] or size >= s[-1]:
            i = 0 if size <= s[0] else -1
            end = self.poly(s[i])
            return self.poly(size) * p[i] / end if end > 0 else self.poly(size) + p[i] - end
        i = next(k for k in range(len(s) - 1) if s[k] <= size <= s[k + 1])
        if p[i] > 0 and p[i + 1] > 0:
            slope = math.log(p[i + 1] / p[i]) / math.log(s[i + 1] / s[i])
            return p[i] * (size / s[i]) ** slope
        return p[i] + (p[i + 1] - p[i]) * (size - s[i]) / (s[i + 1] - s[i])

    def formula(self) -> str:
        """'1.2e+06 + 3.4e+03 L^2' for messages and the page."""
        terms = [f"{c:.4g}" + ("" if k == 0 else " L" if k == 1 else f" L^{k}")
                 for k, c in enumerate(self.coeffs) if c]
        text = " + ".join(terms).replace("+ -", "- ") or "0"
        return text if self.error_pct == 0 else f"through the traced points (~{text}, off by {self.error_pct:.1f} %)"

    def as_dict(self) -> dict[str, Any]:
        return {"law": self.name, "coeffs": list(self.coeffs), "points": list(self.points),
                "error_pct": self.error_pct}


def batched(law: Law, size: float, batch: int) -> float:
    """`batch` samples at `size`: the law's constant term once per step (clipped to the law's value), the rest per
    sample."""
    value = law.at(size)
    fixed = min(max(law.coeffs[0], 0.0), value)
    return fixed + batch * (value - fixed)


@dataclass(frozen=True)
class Envelope:
    """Peak memory per sample: the largest of several laws, one per moment of the step that was the peak at some
    traced size (live bytes at one moment are a polynomial in L, but which moment peaks changes with L: a constant
    gradient buffer at small L, saved activations at large L)."""

    pieces: tuple[Law, ...]
    points: tuple[float, ...]  # the traced peaks
    error_pct: float = 0.0

    def at(self, size: float) -> float:
        return max(law.at(size) for law in self.pieces)

    def batched(self, size: float, batch: int) -> float:
        """`batch` samples: the largest piece, each with its constant term once per step."""
        return max(batched(law, size, batch) for law in self.pieces)

    def formula(self) -> str:
        texts = [law.formula() for law in self.pieces]
        return texts[0] if len(texts) == 1 else "max(" + ", ".join(texts) + ")"

    def as_dict(self) -> dict[str, Any]:
        return {"points": list(self.points), "error_pct": self.error_pct,
                "pieces": [law.as_dict() for law in self.pieces]}


@dataclass(frozen=True, eq=True)
class TracedProfile(CachedHash):
    """A model traced from its PyTorch code: the ModelProfile protocol answered from measured growth laws."""

    __hash__ = CachedHash.__hash__  # dataclass would otherwise regenerate it

    id: str
    name: str
    source: str
    input_size_name: str
    default_input_size: int
    params: int
    sizes: tuple[int, ...]
    torch_version: str
    traced_on: str
    work: tuple[tuple[str, str, str, Law], ...]  # (step, group, quantity, law)
    kernels: tuple[tuple[str, Law], ...]  # (step, law)
    memory: tuple[tuple[str, Envelope], ...]  # (MEMORY name, peak law)
    notes: str = ""
    kind: str = field(default="traced", init=False)
    cross_check = ""  # a trace measures the user's own code: nothing reported to disagree with

    # ------------------------------------------------------------ the model protocol: what it is
    can_generate = False
    trained_context = None
    tensor_parallel_heads = None  # traced on one device: no tensor-parallel split is modelled
    tp_projections_per_gather = 1.0  # (nor its gathers)
    shard_units = 1  # FSDP gathers the whole model at once
    attention_head_dim = None  # the trace measures the code's own attention, not its head width

    @property
    def counts_tokens(self) -> bool:
        return self.input_size_name == "tokens"

    @property
    def shard_unit_params(self) -> int:
        return self.params

    @property
    def active_params(self) -> int:
        return self.params  # a trace measures what ran: every parameter counts as used

    @property
    def quantizable_params(self) -> int:
        return self.params  # the trace does not tell embeddings from matrices: all count as quantized

    def quantized_params(self, scope: str) -> int:
        return self.params  # nor experts from the rest: any scope quantizes all, as the work formulas count them

    @property
    def kernels_per_forward(self) -> float:
        """The trace counts eager ATen ops; in fused-block units, as the runtimes' factors expect."""
        return max(1.0, self._kernels("forward").at(self.default_input_size)) / EAGER_KERNELS_PER_FUSED

    def architecture(self) -> dict[str, Any] | None:
        return None  # measured, not editable: re-trace the code to change it

    def describe(self) -> str:
        return (f"traced profile · {self.params:,} params · {self.input_size_name} "
                f"{self.sizes[0]:,}-{self.sizes[-1]:,} traced (torch {self.torch_version}, {self.traced_on})")

    def listing(self) -> dict[str, int | None]:
        return {"layers": None, "hidden": None, "context": self.default_input_size}

    # ------------------------------------------------------------ laws
    def law(self, step: str, group: str, quantity: str) -> Law:
        return next(law for s, g, q, law in self.work if (s, g, q) == (step, group, quantity))

    def _kernels(self, step: str) -> Law:
        return next(law for s, law in self.kernels if s == step)

    def memory_law(self, name: str) -> Envelope:
        return next(law for n, law in self.memory if n == name)

    def _memory_bytes(self, kind: str, act_bytes: float, size: int, batch: int) -> float:
        """Peak activation bytes of `batch` samples: the fp32 trace for 4-byte activations, the bf16-autocast trace
        for narrower ones, scaled to the plan's activation width."""
        if act_bytes >= FP32_BYTES:
            return self.memory_law(f"{kind}_fp32").batched(size, batch) * act_bytes / FP32_BYTES
        return self.memory_law(f"{kind}_bf16").batched(size, batch) * act_bytes / BF16_BYTES

    def check_size(self, size: int) -> None:
        """Every law must be non-negative at `size`, and memory must not shrink from the default size to `size` (or
        back); ValueError naming the law otherwise."""
        lo, hi = sorted((size, self.default_input_size))
        named = ([(f"work.{s}.{g}.{q}", law) for s, g, q, law in self.work]
                 + [(f"kernels.{s}", law) for s, law in self.kernels])
        for name, law in named + [(f"memory.{n}", law) for n, law in self.memory]:
            if law.at(size) < 0:
                raise ValueError(f"{self.name}: {name} is negative at {self.input_size_name}={size:,} "
                                 f"({law.formula()}); re-trace with sizes that cover it")
        for name, law in self.memory:
            if law.at(hi) < law.at(lo):
                raise ValueError(f"{self.name}: memory.{name} shrinks from {self.input_size_name}={lo:,} to {hi:,} "
                                 f"({law.formula()}); memory can't fall as the input grows: re-trace the model")

    # ------------------------------------------------------------ the model protocol: work per step
    def _groups(self, step: str, s: Setup, batch: int, size: int, suffix: str) -> tuple[OpGroup, ...]:
        p = s.precision
        out = []
        for group in GROUPS:
            flops = batched(self.law(step, group, "flops"), size, batch)
            weights = self.law(step, group, "weight_bytes").at(size) * p.weight_bytes / FP32_BYTES
            acts = batched(self.law(step, group, "activation_bytes"), size, batch) * p.act_bytes / FP32_BYTES
            path = p.compute_path if group == "linear layers" else s.attention_path
            out.append(OpGroup(group + suffix, flops, weights + acts, path,
                               f"traced {step}: FLOPs per sample {self.law(step, group, 'flops').formula()}; bytes = "
                               f"weights x {p.weight_bytes:g}/4 + activations x {p.act_bytes:g}/4 (fp32 trace); "
                               "terms constant in L once per step, the rest x batch"
                               + ("; GEMM shapes not traced: the matmul ceiling unshaped" if flops else "")))
        return (*out[:1], *dequant_groups(self.params, s), *out[1:])

    def forward_work(self, s: Setup, batch: int, size: int) -> tuple[OpGroup, ...]:
        return self._groups("forward", s, batch, size, "")

    def train_work(self, s: Setup, batch: int, size: int, checkpointing: bool) -> tuple[OpGroup, ...]:
        return self._groups("train_checkpointed" if checkpointing else "train", s, batch, size, " (fwd+bwd)")

    def prefill_work(self, s: Setup, batch: int, prompt: int) -> tuple[OpGroup, ...]:
        raise ValueError(f"{self.name} is a traced profile: it has no prefill (use infer or train)")

    def decode_work(self, s: Setup, batch: int) -> tuple[OpGroup, ...]:
        raise ValueError(f"{self.name} is a traced profile: it cannot generate (use infer or train)")

    def context_parallel_comm(self, s: Setup, tokens: int) -> tuple[Collective, ...]:
        """Context parallel is modelled for decoders only."""
        return ()

    def tensor_parallel_comm(self, s: Setup, tokens: int, logits_rows: int,
                             rounds: int = 1) -> tuple[Collective, ...]:
        return ()

    # ------------------------------------------------------------ the model protocol: memory
    def inference_memory(self, s: Setup, batch: int, size: int) -> tuple[MemoryItem, ...]:
        act = self._memory_bytes("inference", s.precision.act_bytes, size, batch)
        return (MemoryItem("activations", act / BYTES_PER_GB,
                           "batch {} x traced peak of the no-grad forward at L={} ({:g} B activations; terms constant "
                           "in L once)", (batch, size, s.precision.act_bytes)),)

    def generate_memory(self, s: Setup, batch: int, prompt: int, gen: int) -> tuple[MemoryItem, ...]:
        raise ValueError(f"{self.name} is a traced profile: it cannot generate (use infer or train)")

    def train_logits_bytes(self, batch: int, size: int) -> float:
        return 0.0  # a traced peak is one number: the loss's share is not told apart

    def train_activation_memory(self, s: Setup, batch: int, size: int, checkpointing: bool) -> MemoryItem:
        kind = "train_checkpointed" if checkpointing else "train"
        act = self._memory_bytes(kind, s.precision.act_bytes, size, batch)
        return MemoryItem("activations", act / BYTES_PER_GB,
                          f"batch {batch} x traced peak of a training step at L={size} (terms constant in L once)"
                          + (" with activation checkpointing" if checkpointing else "")
                          + f" ({s.precision.act_bytes:g} B activations)")


# ---------------------------------------------------------------- parsing and checks


def _numbers(rec: Record, fld: str, lo: int, hi: int) -> tuple[float, ...]:
    """A list of lo..hi finite numbers under `fld`."""
    value = rec.raw(fld)
    if not isinstance(value, list) or not lo <= len(value) <= hi:
        raise rec.fail(fld, f"expected a list of {lo} to {hi} numbers, got {shown(value)}")
    return tuple(check_number(v, -1e30, 1e30, False, lambda p, i=i: rec.fail(f"{fld}[{i}]", p))
                 for i, v in enumerate(value))


def _check_points(rec: Record, sizes: tuple[int, ...], points: tuple[float, ...], memory: bool) -> None:
    for size, y in zip(sizes, points):
        if y < 0:
            raise rec.fail("points", f"negative ({y:g}) at L={size:,}: a count or a size can't be negative")
    if memory:
        for (a, ya), (b, yb) in zip(zip(sizes, points), zip(sizes[1:], points[1:])):
            if yb < ya:
                raise rec.fail("points", f"memory decreases from L={a:,} ({ya:g} B) to L={b:,} ({yb:g} B); "
                                         "memory can't fall as the input grows: re-trace the model")


def _check_agrees(rec: Record, law: Law | Envelope, sizes: tuple[int, ...], what: str) -> None:
    """The law (a Law's polynomial) must reproduce its traced points within its stated error (plus rounding slack)."""
    scale = max(law.points) or 1.0
    value = law.poly if isinstance(law, Law) else law.at
    for size, y in zip(sizes, law.points):
        miss = abs(value(size) - y) / max(abs(y), 1e-9 * scale) * 100
        if miss > law.error_pct + AGREE_SLACK_PCT:
            raise rec.fail(what, f"the law gives {value(size):.4g} at L={size:,} but the traced point is "
                                 f"{y:.4g} ({miss:.1f} % off, stated error {law.error_pct:g} %): edit both or re-trace")


def parse_law(rec: Record, sizes: tuple[int, ...]) -> Law:
    """One law: coefficients, the traced points (one per size, non-negative) and its error. The coefficients must
    reproduce the points within the stated error, so an edit to one without the other fails."""
    rec.check_keys(LAW_FIELDS)
    coeffs = _numbers(rec, "coeffs", 1, len(LAW_NAMES))
    points = _numbers(rec, "points", len(sizes), len(sizes))
    if rec.raw("law", required=False) is not None:
        rec.text("law", choices=(LAW_NAMES[len(coeffs) - 1],))
    _check_points(rec, sizes, points, memory=False)
    law = Law(coeffs, points, rec.number("error_pct", lo=0, hi=1e6), sizes)
    _check_agrees(rec, law, sizes, "coeffs")
    return law


def parse_envelope(rec: Record, sizes: tuple[int, ...]) -> Envelope:
    """A peak-memory law: its traced peaks (non-negative, never falling as L grows) and the laws it is the max of."""
    rec.check_keys(ENVELOPE_FIELDS)
    points = _numbers(rec, "points", len(sizes), len(sizes))
    _check_points(rec, sizes, points, memory=True)
    pieces = tuple(parse_law(r, sizes) for r in rec.records("pieces", MAX_SIZES))
    envelope = Envelope(pieces, points, rec.number("error_pct", lo=0, hi=1e6))
    _check_agrees(rec, envelope, sizes, "pieces")
    return envelope


def _sizes(rec: Record) -> tuple[int, ...]:
    value = rec.raw("sizes")
    if not isinstance(value, list) or not MIN_SIZES <= len(value) <= MAX_SIZES:
        raise rec.fail("sizes", f"expected a list of {MIN_SIZES} to {MAX_SIZES} sizes, got {shown(value)}")
    sizes = tuple(Record(rec.path, rec.label, {"sizes": v}).number("sizes", lo=1, hi=10**7, integer=True)
                  for v in value)
    if any(b <= a for a, b in zip(sizes, sizes[1:])):
        raise rec.fail("sizes", "expected strictly increasing sizes")
    return sizes


def _work(rec: Record, sizes: tuple[int, ...]) -> tuple[tuple[str, str, str, Law], ...]:
    work = rec.child("work")
    work.check_keys(STEPS)
    out = []
    for step in STEPS:
        step_rec = work.child(step)
        step_rec.check_keys(GROUPS)
        for group in GROUPS:
            group_rec = step_rec.child(group)
            group_rec.check_keys(QUANTITIES)
            out += [(step, group, q, parse_law(group_rec.child(q), sizes)) for q in QUANTITIES]
    return tuple(out)


def parse_traced(rec: Record) -> TracedProfile:
    """A traced profile (kind: traced) from its record; DataFileError naming file, record and field otherwise."""
    rec.check_keys(FIELDS)
    trace = rec.child("trace")
    trace.check_keys(TRACE_FIELDS)
    sizes = _sizes(trace)
    args = trace.child("args", required=False)
    if args is not None and len(args.data) > MAX_ARGS:
        raise trace.fail("args", f"{len(args.data):,} arguments; at most {MAX_ARGS} are accepted")
    for fld in ("factory", "torch_version", "autocast"):
        trace.text(fld, required=fld != "autocast", max_len=500)
    trace.number("seconds", required=False, lo=0, hi=1e6)
    trace.number("tolerance_pct", required=False, lo=0, hi=100)
    kernels, memory = rec.child("kernels"), rec.child("memory")
    kernels.check_keys(STEPS)
    memory.check_keys(MEMORY)
    ops = rec.raw("ops", required=False)
    if ops is not None and (not isinstance(ops, list) or len(ops) > MAX_OPS_LISTED):
        raise rec.fail("ops", f"expected a list of at most {MAX_OPS_LISTED} op summaries")
    profile = TracedProfile(
        id=rec.text("id", max_len=200), name=rec.text("name", max_len=200), source=rec.text("source", max_len=2000),
        input_size_name=rec.text("input_size_name", max_len=40),
        default_input_size=rec.number("default_input_size", lo=1, hi=10**7, integer=True),
        params=rec.number("params", lo=0, hi=10**13, integer=True), sizes=sizes,
        torch_version=trace.text("torch_version"), traced_on=trace.day("date").isoformat(),
        work=_work(rec, sizes),
        kernels=tuple((s, parse_law(kernels.child(s), sizes)) for s in STEPS),
        memory=tuple((m, parse_envelope(memory.child(m), sizes)) for m in MEMORY),
        notes=rec.text("notes", required=False, max_len=MAX_TEXT) or "",
    )
    try:
        profile.check_size(profile.default_input_size)
    except ValueError as exc:
        raise rec.fail("default_input_size", str(exc)) from None
    return profile
