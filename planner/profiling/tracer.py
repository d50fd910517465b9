"""Trace any PyTorch model into a profile (kind: traced): `python -m planner profile MODULE:FACTORY --input SPEC`.

The factory (a function in a Python file or an importable module) is called as `factory(size, **args)` and returns
`(model, inputs)`, `(model, inputs, loss_fn)` or a dict with keys model, inputs, loss (optional) and checkpoint
(optional: the submodules to wrap in activation checkpointing; default: every block of the outermost nn.ModuleLists).
`inputs` is one tensor, a tuple of positional arguments or a dict of keyword arguments, for ONE sample (batch 1).

Everything runs under FakeTensorMode: tensors carry shapes and dtypes but no data, so nothing is allocated, no GPU
is needed and the time per traced step does not depend on the input size. At each size the profiler runs a no-grad
forward (eval mode), a training step (forward, loss, backward; train mode) and the training step with the blocks
checkpointed, each in fp32 and under CPU bf16 autocast, and counts per aten op:
  FLOPs with torch's own formulas (torch.utils.flop_counter's registry; causal SDPA on CPU counts the attended pairs,
      S(S+1)/2 per head, as FlashAttention skips masked tiles),
  bytes read and written (every tensor argument and result at its size; broadcast dimensions once; a gather reads
      what it returns; tensors that hold parameters are weight bytes, the rest activation bytes),
  kernels (ops that launch work: not views, not allocations),
  live activation memory (new storages, freed when their last reference goes; parameters, their autocast copies and
      parameter gradients, which the engine counts apart, excluded; the sample's inputs included) and its peak.
Op groups: matmuls with a parameter operand (and every mm/addmm/convolution) are 'linear layers'; matmuls between
activations and fused attention are 'attention'; everything else is 'elementwise & norms'.

It refuses, naming the problem: a factory that raises, a model that needs CUDA, data-dependent control flow (.item(),
a branch on a tensor, a boolean mask), ops without a FLOP formula (custom ops, linalg/fft: named with their share of
the step's bytes and kernels), a trace over its time cap; run from the command line it traces in a child process
whose host memory is capped, so a factory that allocates real tensors can't exhaust the machine.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import weakref
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime, UTC
from pathlib import Path
from typing import Any
from collections.abc import Callable

import torch
from torch import nn
from torch._subclasses.fake_tensor import DataDependentOutputException, DynamicOutputShapeException, FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.checkpoint import checkpoint
from torch.utils.flop_counter import flop_registry, sdpa_backward_flop_count

from planner import ROOT_DIR
from planner.inputs.models.traced import GROUPS, MAX_SIZES, MIN_SIZES, QUANTITIES, STEPS, TracedProfile
from planner.calibration.growth import (DEFAULT_TOLERANCE_PCT, check_document, document_text, profile_document,
                                        summary_rows)

__all__ = ["ProfileError", "Request", "default_loss", "explain", "normalise", "parse_factory_arg", "parse_input_spec",
           "profile", "summary_rows", "trace"]
aten = torch.ops.aten
MAX_OPS_PER_STEP = 2_000_000  # aten ops in one traced step (a 70B decoder's training step has ~10^4)
DEFAULT_MAX_SECONDS = 600.0  # whole trace, all sizes
DEFAULT_MAX_HOST_GB = 4.0  # real host memory the tracing child may add beyond torch itself
CHILD_START_S = 60.0  # the child's own start (importing torch) on top of the trace's cap
AUTOCAST = "cpu bf16"  # torch.autocast('cpu', dtype=torch.bfloat16): CUDA's op lists differ a little (AUTOCAST_NOTE)
AUTOCAST_NOTE = ("bf16 memory was traced under CPU autocast (torch.autocast('cpu', dtype=torch.bfloat16)); "
                 "CUDA autocast runs a few more ops (layer_norm, softmax) in fp32, so a GPU's 16-bit peak can be "
                 "somewhat higher")
ATTENTION_OPS = {aten._scaled_dot_product_flash_attention_for_cpu,
                 aten._scaled_dot_product_flash_attention_for_cpu_backward,
                 aten._scaled_dot_product_flash_attention, aten._scaled_dot_product_flash_attention_backward,
                 aten._scaled_dot_product_efficient_attention, aten._scaled_dot_product_efficient_attention_backward,
                 aten._scaled_dot_product_cudnn_attention, aten._scaled_dot_product_cudnn_attention_backward,
                 aten._flash_attention_forward, aten._flash_attention_backward,
                 aten._efficient_attention_forward, aten._efficient_attention_backward,
                 aten._native_multi_head_attention}
BATCHED_MATMULS = {aten.bmm, aten.baddbmm}  # 'attention' unless a parameter is an operand
GATHERS = {aten.embedding, aten.index_select, aten.gather, aten.index}  # read from arg 0 only what they return
NO_KERNEL = {aten.detach, aten.lift_fresh, aten._unsafe_view, aten.empty, aten.empty_strided, aten.empty_like,
             aten.new_empty, aten.new_empty_strided, aten._local_scalar_dense, aten.alias, aten.set_,
             aten.resize_, aten.is_same_size}
# aten ops that do heavy work without a formula in torch's registry: refused by name, like custom ops
NEEDS_FORMULA = re.compile(r"^_?(linalg_(eig|svd|qr|cholesky|solve|inv|lstsq|lu|det|slogdet|matrix_exp|householder|ldl)"
                           r"|fft_|_fft|cholesky|triangular_solve|_cdist|svd|qr|geqrf|ormqr|"
                           r"_transformer_encoder|_native_decoder|_triton)")
CUDA_WORDS = re.compile(r"cuda|nvidia|\bnccl\b|\bgpu\b", re.I)


class ProfileError(ValueError):
    """The model can't be traced as given; the message names the problem and what to do."""


# ---------------------------------------------------------------- FLOP formulas torch lacks


def _causal_pairs(s_q: int, s_k: int) -> int:
    """(query, key) pairs a causal mask keeps (top-left aligned, as torch's is_causal): sum_i min(i + 1, s_k)."""
    full = min(s_q, s_k)
    return full * (full + 1) // 2 + max(0, s_q - s_k) * s_k


def _sdpa_cpu_flops(q, k, v, dropout_p=0.0, is_causal=False, *args, out_val=None, **kwargs) -> int:
    """Forward FLOPs of CPU flash SDPA: 2 matmuls x 2 FLOPs per multiply-add over the attended pairs."""
    b, h, s_q, d = q.shape
    s_k, d_v = k.shape[-2], v.shape[-1]
    pairs = _causal_pairs(s_q, s_k) if is_causal else s_q * s_k
    return 2 * b * h * pairs * (d + d_v)


def _sdpa_cpu_backward_flops(grad_out, q, k, v, out, logsumexp, dropout_p=0.0, is_causal=False, *args,
                             out_val=None, **kwargs) -> int:
    """Backward = torch's SDPA backward count (5 matmuls: 2.5x forward), causal-scaled like the forward."""
    full = sdpa_backward_flop_count(tuple(grad_out.shape), tuple(q.shape), tuple(k.shape), tuple(v.shape))
    s_q, s_k = q.shape[-2], k.shape[-2]
    return full * _causal_pairs(s_q, s_k) // (s_q * s_k) if is_causal else full


def _native_mha_flops(query, key, value, embed_dim, num_head, *args, out_val=None, **kwargs) -> int:
    """nn.MultiheadAttention's eval fast path (one fused op): Q, K, V and output projections + QK^T and AV."""
    b, s_q, e = query.shape
    s_k = key.shape[1]
    return 2 * b * e * e * (2 * s_q + 2 * s_k) + 4 * b * s_q * s_k * e


EXTRA_FORMULAS: dict[Any, Callable[..., int]] = {
    aten._native_multi_head_attention: _native_mha_flops,
    aten._scaled_dot_product_flash_attention_for_cpu: _sdpa_cpu_flops,
    aten._scaled_dot_product_flash_attention_for_cpu_backward: _sdpa_cpu_backward_flops,
}


def formula_for(packet) -> Callable[..., int] | None:
    """This module's formulas first, then torch's registry as it is now (a factory may register its own)."""
    return EXTRA_FORMULAS.get(packet) or flop_registry.get(packet)


# ---------------------------------------------------------------- counting


def _is_view(func) -> bool:
    return any(r.alias_info is not None and not r.alias_info.is_write for r in func._schema.returns)


def tensor_bytes(t: torch.Tensor) -> int:
    """Bytes a kernel touches for `t`: its elements, broadcast (stride-0) dimensions counted once."""
    n = 1
    for size, stride in zip(t.shape, t.stride()):
        if stride != 0:
            n *= size
    return n * t.element_size()


def _storage_key(t: torch.Tensor) -> int:
    return t.untyped_storage()._cdata


@dataclass
class StepCount:
    """What one traced step did: per op group FLOPs, weight and activation bytes; kernels; peak live bytes."""

    flops: dict[str, float] = field(default_factory=lambda: dict.fromkeys(GROUPS, 0.0))
    weight_bytes: dict[str, float] = field(default_factory=lambda: dict.fromkeys(GROUPS, 0.0))
    activation_bytes: dict[str, float] = field(default_factory=lambda: dict.fromkeys(GROUPS, 0.0))
    kernels: int = 0
    peak_bytes: int = 0
    timeline: list[int] = field(default_factory=list)  # live bytes after each op (the peak is one of them)
    ops: dict[str, list[float]] = field(default_factory=dict)  # name -> [calls, flops, bytes]
    unsupported: dict[str, list[float]] = field(default_factory=dict)  # name -> [calls, bytes]

    @property
    def total_bytes(self) -> float:
        return sum(self.weight_bytes.values()) + sum(self.activation_bytes.values())


class Counter(TorchDispatchMode):
    """Counts FLOPs, bytes, kernels and live memory of every aten op dispatched while it is active."""

    def __init__(self, weights: list[torch.Tensor], inputs: list[torch.Tensor], deadline: float, where: str):
        super().__init__()
        self.count = StepCount()
        self.deadline, self.where, self.ops_seen = deadline, where, 0
        self.weight_keys = {_storage_key(t) for t in weights}
        self.live = 0
        self.seen: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        for t in weights:
            self.seen[t.untyped_storage()] = 0
        for t in inputs:
            self._allocate(t.untyped_storage(), t.untyped_storage().nbytes())
        self.count.timeline.append(self.live)

    def _allocate(self, storage, nbytes: int) -> None:
        if storage in self.seen:
            return
        self.seen[storage] = nbytes
        if nbytes:
            self.live += nbytes
            weakref.finalize(storage, self._free, nbytes)
            self.count.peak_bytes = max(self.count.peak_bytes, self.live)

    def _free(self, nbytes: int) -> None:
        self.live -= nbytes

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.ops_seen += 1
        if self.ops_seen % 256 == 0 and time.monotonic() > self.deadline:
            raise ProfileError(f"tracing took longer than its time cap ({self.where}); raise --max-seconds or trace "
                               "fewer or smaller sizes")
        if self.ops_seen > MAX_OPS_PER_STEP:
            raise ProfileError(f"more than {MAX_OPS_PER_STEP:,} operations in one step ({self.where}): a Python loop "
                               "over the input? trace smaller sizes")
        out = func(*args, **kwargs)
        if func.namespace == "prim" or _is_view(func):  # views allocate nothing and launch nothing
            return out
        ins = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        outs = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
        weight_copy = func.overloadpacket is aten._to_copy and ins and _storage_key(ins[0]) in self.weight_keys
        for t in outs:  # a weight's autocast copy is counted with the weights (the engine's autocast copy)
            self._allocate(t.untyped_storage(), 0 if weight_copy else t.untyped_storage().nbytes())
        # one entry per op that can allocate: the same at every size as long as the code runs the same kernels
        # (a slice that is a no-op at one size and not at another is a view, and views are not recorded)
        self.count.timeline.append(self.live)
        if func.overloadpacket in NO_KERNEL:
            return out
        self._work(func, args, kwargs, ins, outs, out)
        return out

    def _work(self, func, args, kwargs, ins, outs, out) -> None:
        c, packet, name = self.count, func.overloadpacket, str(func.overloadpacket)
        is_weight = [_storage_key(t) in self.weight_keys for t in ins]
        read = [tensor_bytes(t) for t in ins]
        if packet in GATHERS and ins:
            read[0] = min(read[0], sum(tensor_bytes(t) for t in outs))
        w_bytes = sum(b for b, w in zip(read, is_weight) if w)
        a_bytes = sum(b for b, w in zip(read, is_weight) if not w) + sum(tensor_bytes(t) for t in outs)
        formula = formula_for(packet)
        flops = float(formula(*args, **kwargs, out_val=out)) if formula else 0.0
        if packet in ATTENTION_OPS or (packet in BATCHED_MATMULS and not any(is_weight)):
            group = "attention"
        elif formula:
            group = "linear layers"
        else:
            group = "elementwise & norms"
        if not formula and (func.namespace not in ("aten", "prim") or NEEDS_FORMULA.match(packet.__name__)):
            calls = c.unsupported.setdefault(name, [0, 0.0])
            calls[0] += 1
            calls[1] += w_bytes + a_bytes
        c.flops[group] += flops
        c.weight_bytes[group] += w_bytes
        c.activation_bytes[group] += a_bytes
        c.kernels += 1
        tally = c.ops.setdefault(name, [0, 0.0, 0.0])
        tally[0] += 1
        tally[1] += flops
        tally[2] += w_bytes + a_bytes


# ---------------------------------------------------------------- the user's factory


def load_factory(spec: str) -> Callable[..., Any]:
    """MODULE:FACTORY -> the factory function; MODULE is a .py file (or a path) or an importable module name."""
    module_part, sep, name = spec.rpartition(":")
    if not sep or not module_part or not name.isidentifier():
        raise ProfileError(f"expected MODULE:FACTORY (a Python file or module, a colon, a function name), got "
                           f"'{spec[:80]}': e.g. examples/models/gpt2.py:build")
    try:
        if module_part.endswith(".py") or "/" in module_part or os.sep in module_part:
            path = Path(module_part)
            if not path.is_file():
                raise ProfileError(f"no such Python file: {module_part}")
            name_in_sys = "planner_profiled_" + re.sub(r"\W", "_", str(path.resolve()))
            module = sys.modules.get(name_in_sys)  # a file is run once per process, like an import
            if module is None:
                import_spec = importlib.util.spec_from_file_location(name_in_sys, path)
                module = importlib.util.module_from_spec(import_spec)
                sys.path.insert(0, str(path.resolve().parent))  # the file may import its siblings
                sys.modules[name_in_sys] = module
                try:
                    import_spec.loader.exec_module(module)
                except BaseException:
                    del sys.modules[name_in_sys]
                    raise
        else:
            module = importlib.import_module(module_part)
    except ProfileError:
        raise
    except Exception as exc:  # the user's module is the user's code: any error is theirs to read
        raise ProfileError(f"importing {module_part} raised {type(exc).__name__}: {exc}{_where(exc)}") from None
    factory = getattr(module, name, None)
    if not callable(factory):
        raise ProfileError(f"{module_part} has no function '{name}'")
    return factory


TRACEBACK_FRAMES = 10_000  # frames read from a traceback: all of them, whatever sys.tracebacklimit says


def _where(exc: BaseException) -> str:
    """' (at file:line in func)' for the deepest frame of the user's code in the traceback. An explicit limit: a
    library that leaves sys.tracebacklimit at 0 (SkyPilot's ux_utils does when an error passes through it) would
    otherwise hide every frame."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__, limit=TRACEBACK_FRAMES)
              if "/torch/" not in f.filename and "/planner/profiling/" not in f.filename]
    return f" (at {frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name})" if frames else ""


def explain(exc: BaseException, what: str) -> ProfileError:
    """The user-facing refusal for an exception raised by the factory or the model."""
    text = f"{type(exc).__name__}: {str(exc).strip()[:400]}"
    if isinstance(exc, (DataDependentOutputException, DynamicOutputShapeException)):
        op = str(getattr(exc, "func", "") or exc)
        return ProfileError(f"{what}: data-dependent control flow{_where(exc)}: the code reads tensor values "
                            f"({op}: .item(), a Python branch on a tensor, a boolean mask or nonzero), which a trace "
                            "without data can't follow. Compute such values from the size in Python, or pass them "
                            "as factory arguments")
    if isinstance(exc, ProfileError):
        return exc
    if isinstance(exc, MemoryError) or "can't allocate memory" in str(exc):
        return ProfileError(f"{what}: ran out of host memory{_where(exc)}: the code allocates real tensors (numpy, "
                            "torch.load, .numpy()) beyond the cap; build everything with torch on the default device")
    if CUDA_WORDS.search(str(exc)) or CUDA_WORDS.search(type(exc).__name__):
        return ProfileError(f"{what}: the model needs CUDA ({text}){_where(exc)}. The profiler traces on fake CPU "
                            "tensors and needs no GPU: build the model and inputs on the default device (no "
                            ".cuda(), no device='cuda'; take the device as a factory argument if you need one)")
    return ProfileError(f"{what} raised {text}{_where(exc)}")


@dataclass
class Built:
    """The factory's result at one size, normalised."""

    model: nn.Module
    args: tuple
    kwargs: dict
    loss: Callable[[Any], torch.Tensor] | None
    blocks: tuple[nn.Module, ...]
    checkpointing: list[bool] = field(default_factory=lambda: [False])


def _default_blocks(model: nn.Module) -> tuple[nn.Module, ...]:
    """The blocks of the outermost nn.ModuleLists (a transformer's layers)."""
    found: list[nn.Module] = []

    def walk(m: nn.Module) -> None:
        for child in m.children():
            if isinstance(child, nn.ModuleList):
                found.extend(child)
            else:
                walk(child)
    walk(model)
    return tuple(found)


def normalise(result: Any, spec: str) -> Built:
    loss, blocks = None, None
    if isinstance(result, dict):
        unknown = set(result) - {"model", "inputs", "loss", "checkpoint"}
        if unknown or "model" not in result or "inputs" not in result:
            raise ProfileError(f"{spec} returned a dict; expected the keys model, inputs (and optionally loss, "
                               f"checkpoint), got {', '.join(sorted(map(str, result)))[:200]}")
        model, inputs, loss, blocks = result["model"], result["inputs"], result.get("loss"), result.get("checkpoint")
    elif isinstance(result, (tuple, list)) and len(result) in (2, 3):
        model, inputs, *rest = result
        loss = rest[0] if rest else None
    else:
        raise ProfileError(f"{spec} returned {type(result).__name__}; expected (model, inputs), "
                           "(model, inputs, loss_fn) or a dict with model and inputs")
    if not isinstance(model, nn.Module):
        raise ProfileError(f"{spec} returned a {type(model).__name__} as the model; expected a torch.nn.Module")
    if loss is not None and not callable(loss):
        raise ProfileError(f"{spec} returned a loss that is not callable")
    if isinstance(inputs, torch.Tensor):
        args, kwargs = (inputs,), {}
    elif isinstance(inputs, dict):
        args, kwargs = (), dict(inputs)
    elif isinstance(inputs, (tuple, list)):
        args, kwargs = tuple(inputs), {}
    else:
        raise ProfileError(f"{spec} returned inputs of type {type(inputs).__name__}; expected a tensor, a tuple "
                           "of arguments or a dict of keyword arguments")
    blocks = tuple(blocks) if blocks is not None else _default_blocks(model)
    if not all(isinstance(b, nn.Module) for b in blocks):
        raise ProfileError(f"{spec}: 'checkpoint' must list submodules of the model")
    built = Built(model, args, kwargs, loss, blocks)
    _wrap_blocks(built)
    return built


def _wrap_blocks(built: Built) -> None:
    """Each block runs under torch.utils.checkpoint (non-reentrant) while built.checkpointing[0] is set."""
    flag = built.checkpointing
    for block in built.blocks:
        def run(*a, _forward=block.forward, **k):
            if flag[0] and torch.is_grad_enabled():
                return checkpoint(_forward, *a, use_reentrant=False, preserve_rng_state=False, **k)
            return _forward(*a, **k)
        block.forward = run


def default_loss(output: Any) -> torch.Tensor:
    """Sum of every floating-point output (what a loss reduces to): one scalar to call backward on."""
    parts = [t.sum() for t in tree_leaves(output) if isinstance(t, torch.Tensor) and t.is_floating_point()]
    if not parts:
        raise ProfileError("the model returned no floating-point tensor to train on: give the factory a loss")
    total = parts[0]
    for p in parts[1:]:
        total = total + p
    return total


# ---------------------------------------------------------------- tracing


def _drop_grad(p: torch.Tensor) -> None:
    p.grad = None  # parameter gradients are the engine's own item (params x 4 B): not activations


def measure(built: Built, step: str, bf16: bool, deadline: float, where: str) -> StepCount:
    """Trace one step: 'forward' (no grad, eval), 'train' or 'train_checkpointed' (forward, loss, backward)."""
    training = step != "forward"
    built.model.train(training)
    built.checkpointing[0] = step == "train_checkpointed"
    weights = list(built.model.parameters()) + list(built.model.buffers())
    inputs = [t for t in tree_leaves((built.args, built.kwargs)) if isinstance(t, torch.Tensor)]
    counter = Counter(weights, inputs, deadline, where)
    cast = torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else nullcontext()
    with (nullcontext() if training else torch.no_grad()), counter:
        with cast:
            output = built.model(*built.args, **built.kwargs)
            loss = (built.loss or default_loss)(output) if training else None
        if training:
            if not isinstance(loss, torch.Tensor) or loss.numel() != 1 or not loss.requires_grad:
                raise ProfileError("the loss must be a scalar tensor that depends on the parameters")
            loss.backward()
        del output, loss
    return counter.count


def _unsupported(count: StepCount, where: str) -> ProfileError:
    total_b, total_k = count.total_bytes or 1.0, count.kernels or 1
    parts = [f"{name} ({int(calls)} calls, {100 * b / total_b:.1f} % of the step's bytes, "
             f"{100 * calls / total_k:.1f} % of its kernels)"
             for name, (calls, b) in sorted(count.unsupported.items(), key=lambda kv: -kv[1][1])]
    return ProfileError(f"ops without a FLOP formula ({where}): {'; '.join(parts)}. Their work can't be priced: "
                        "replace them with aten ops for the trace, or register a formula with "
                        "torch.utils.flop_counter.register_flop_formula before the factory returns")


def _param_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def _build(factory: Callable[..., Any], size: int, args: dict[str, Any], spec: str, where: str) -> Built:
    """The factory's model at one size (under the caller's FakeTensorMode), its gradients dropped as they land."""
    try:
        built = normalise(factory(size, **args), spec)
        for p in built.model.parameters():
            if p.requires_grad:
                p.register_post_accumulate_grad_hook(_drop_grad)
    except Exception as exc:  # the user's code: named, never a traceback
        raise explain(exc, f"the factory {spec} at {where}") from None
    return built


def _measure_checked(built: Built, step: str, bf16: bool, deadline: float, where: str) -> StepCount:
    what = step.replace("_", " ")
    try:
        count = measure(built, step, bf16, deadline, where)
    except Exception as exc:  # the user's code: named, never a traceback
        raise explain(exc, f"the model's {what} step at {where}") from None
    if count.unsupported:
        raise _unsupported(count, f"{what} at {where}")
    return count


def trace(factory: Callable[..., Any], sizes: list[int], args: dict[str, Any], spec: str, size_name: str = "L",
          max_seconds: float = DEFAULT_MAX_SECONDS) -> dict[str, Any]:
    """Measure every step (fp32: work, kernels, memory; bf16 autocast: memory) at every size; the raw series for
    growth.profile_document."""
    deadline, start = time.monotonic() + max_seconds, time.perf_counter()
    work = {s: {g: {q: [] for q in QUANTITIES} for g in GROUPS} for s in STEPS}
    kernels: dict[str, list[int]] = {s: [] for s in STEPS}
    timelines: dict[str, list[list[int]]] = {}
    params, ops = [], None
    for size in sizes:
        where = f"{size_name}={size}"
        with FakeTensorMode(allow_non_fake_inputs=True):
            built = _build(factory, size, args, spec, where)
            params.append(_param_count(built.model))
            for step in STEPS:
                for bf16 in (False, True):
                    count = _measure_checked(built, step, bf16, deadline, where)
                    mem = {"forward": "inference"}.get(step, step) + ("_bf16" if bf16 else "_fp32")
                    timelines.setdefault(mem, []).append(count.timeline)
                    if bf16:
                        continue
                    kernels[step].append(count.kernels)
                    for g in GROUPS:
                        for q, per_group in zip(QUANTITIES, (count.flops, count.weight_bytes, count.activation_bytes)):
                            work[step][g][q].append(per_group[g])
                    ops = count if step == "train" else ops
            del built
    return {"sizes": list(sizes), "params": max(params), "params_by_size": params, "work": work, "kernels": kernels,
            "memory": {name: peak_moments(series) for name, series in timelines.items()}, "ops": _op_summary(ops),
            "seconds": round(time.perf_counter() - start, 3), "torch_version": str(torch.__version__)}


def peak_moments(timelines: list[list[int]]) -> dict[str, list]:
    """The peaks at every size and, when the step ran the same ops at every size, the live bytes at each size's peak
    moment across all sizes (one series per distinct moment): growth.fit_envelope fits one law per series."""
    peaks = [max(t) for t in timelines]
    if len({len(t) for t in timelines}) != 1:
        return {"peaks": peaks, "moments": []}
    moments = sorted({t.index(max(t)) for t in timelines})
    return {"peaks": peaks, "moments": [[t[m] for t in timelines] for m in moments]}


def _op_summary(count: StepCount | None, top: int = 12) -> list[dict[str, Any]]:
    """The training step's heaviest ops at the largest size: calls and share of FLOPs and bytes."""
    if count is None:
        return []
    flops = sum(v[1] for v in count.ops.values()) or 1.0
    moved = sum(v[2] for v in count.ops.values()) or 1.0
    rows = sorted(count.ops.items(), key=lambda kv: -(kv[1][1] / flops + kv[1][2] / moved))[:top]
    return [{"op": name, "calls": int(calls), "flops_pct": round(100 * f / flops, 2),
             "bytes_pct": round(100 * b / moved, 2)} for name, (calls, f, b) in rows]


# ---------------------------------------------------------------- the whole job, in a capped child process


@dataclass(frozen=True)
class Request:
    """What to trace and how; travels to the child process as JSON."""

    spec: str
    sizes: tuple[int, ...]
    args: tuple[tuple[str, Any], ...] = ()
    size_name: str = "L"
    max_seconds: float = DEFAULT_MAX_SECONDS
    max_host_gb: float = DEFAULT_MAX_HOST_GB

    def check(self) -> None:
        if not MIN_SIZES <= len(self.sizes) <= MAX_SIZES:
            raise ProfileError(f"give {MIN_SIZES} to {MAX_SIZES} input sizes (got {len(self.sizes)}): a growth law "
                               "is only trusted when it fits more points than it has coefficients")
        if any(b <= a for a, b in zip(self.sizes, self.sizes[1:])) or self.sizes[0] < 1:
            raise ProfileError("input sizes must be positive and strictly increasing")


def trace_request(req: Request) -> dict[str, Any]:
    """Load the factory and trace, in this process (no memory cap: the child applies it)."""
    req.check()
    factory = load_factory(req.spec)
    return trace(factory, list(req.sizes), dict(req.args), req.spec, req.size_name, req.max_seconds)


def _cap_host_memory(extra_gb: float) -> None:
    """Cap this process's address space at what it uses now plus `extra_gb` (Linux; elsewhere no cap)."""
    try:
        import resource
        with open("/proc/self/status", encoding="ascii") as f:
            used_kb = next(int(line.split()[1]) for line in f if line.startswith("VmSize:"))
    except (ImportError, OSError, StopIteration):
        return
    limit = used_kb * 1024 + int(extra_gb * 1e9)
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))


def _cap_time(seconds: float, spec: str) -> None:
    """Stop this process's trace after `seconds` even inside the user's own Python code (SIGALRM; POSIX only)."""
    def stop(signum, frame):
        raise ProfileError(f"tracing {spec} took longer than {seconds:g} s (--max-seconds) and was stopped: a slow "
                           "factory, or a Python loop over the input")
    if hasattr(signal, "setitimer"):
        signal.signal(signal.SIGALRM, stop)
        signal.setitimer(signal.ITIMER_REAL, seconds)


def child_main(argv: list[str] | None = None) -> None:
    """The tracing child: read the request, cap memory, trace, write the raw result (or the refusal) as JSON."""
    req_path, out_path = (argv or sys.argv)[-2:]
    raw_req = json.loads(Path(req_path).read_text(encoding="utf-8"))
    req = Request(raw_req["spec"], tuple(raw_req["sizes"]), tuple(map(tuple, raw_req["args"])), raw_req["size_name"],
                  raw_req["max_seconds"], raw_req["max_host_gb"])
    torch.set_num_threads(1)
    _cap_host_memory(req.max_host_gb)
    _cap_time(req.max_seconds, req.spec)
    try:
        result = {"ok": True, "raw": trace_request(req)}
    except ProfileError as exc:
        result = {"ok": False, "error": str(exc)}
    except MemoryError:
        result = {"ok": False, "error": f"tracing needed more than {req.max_host_gb:g} GB of host memory "
                                        "(--max-host-gb): the factory allocates real tensors"}
    except Exception as exc:  # anything else from the user's code: named, never a traceback
        result = {"ok": False, "error": str(explain(exc, f"tracing {req.spec}"))}
    Path(out_path).write_text(json.dumps(result), encoding="utf-8")


def run_isolated(req: Request) -> dict[str, Any]:
    """trace_request in a child process with the host-memory and time caps; ProfileError on any failure."""
    req.check()
    with tempfile.TemporaryDirectory(prefix="planner-profile-") as tmp:
        req_path, out_path = Path(tmp, "request.json"), Path(tmp, "result.json")
        req_path.write_text(json.dumps({"spec": req.spec, "sizes": list(req.sizes), "args": list(req.args),
                                        "size_name": req.size_name, "max_seconds": req.max_seconds,
                                        "max_host_gb": req.max_host_gb}), encoding="utf-8")
        code = "from planner.profiling.tracer import child_main; child_main()"
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT_DIR), os.environ.get("PYTHONPATH")])))
        try:
            proc = subprocess.run([sys.executable, "-c", code, str(req_path), str(out_path)], env=env,
                                  capture_output=True, text=True, timeout=req.max_seconds + CHILD_START_S)
        except subprocess.TimeoutExpired:
            raise ProfileError(f"tracing {req.spec} took longer than {req.max_seconds:g} s (--max-seconds) and was "
                               "stopped") from None
        if out_path.exists():
            result = json.loads(out_path.read_text(encoding="utf-8"))
            if not result["ok"]:
                raise ProfileError(result["error"])
            return result["raw"]
        tail = (proc.stderr or "").strip().splitlines()[-3:]
        if proc.returncode < 0 or "MemoryError" in (proc.stderr or ""):
            raise ProfileError(f"the tracing process for {req.spec} was killed (exit {proc.returncode}): it ran out "
                               f"of host memory (cap {req.max_host_gb:g} GB, --max-host-gb) or time")
        raise ProfileError(f"the tracing process for {req.spec} failed (exit {proc.returncode}): "
                           + " / ".join(tail)[:500])


SIZE_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_ ]{0,39}")


def parse_input_spec(text: str) -> tuple[str, tuple[int, ...]]:
    """'tokens=128,256,512' -> ('tokens', (128, 256, 512)); a bare '128,256,512' names the size L."""
    name, sep, sizes = text.rpartition("=")
    name = name.strip() if sep else "L"
    if not SIZE_NAME_RE.fullmatch(name):
        raise ProfileError(f"--input: the size's name must be a word like tokens or residues, got '{name[:40]}'")
    try:
        values = tuple(int(v) for v in sizes.split(",") if v.strip())
    except ValueError:
        raise ProfileError(f"--input: expected NAME=SIZE,SIZE,... with whole numbers, got '{text[:80]}'") from None
    if any(not 1 <= v <= 10**7 for v in values):
        raise ProfileError("--input: sizes must lie between 1 and 10,000,000")
    return name, values


def parse_factory_arg(text: str) -> tuple[str, Any]:
    """'attention=manual' -> ('attention', 'manual'); numbers and true/false become numbers and booleans."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip().isidentifier():
        raise ProfileError(f"--arg: expected KEY=VALUE with KEY a Python name, got '{text[:80]}'")
    value = value.strip()
    if value.lower() in ("true", "false"):
        return key.strip(), value.lower() == "true"
    for kind in (int, float):
        try:
            return key.strip(), kind(value)
        except ValueError:
            pass
    return key.strip(), value


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "model"


def profile(req: Request, default_size: int | None = None, model_id: str | None = None, name: str | None = None,
            tolerance_pct: float = DEFAULT_TOLERANCE_PCT, isolated: bool = True
            ) -> tuple[str, TracedProfile, list[str]]:
    """Trace `req` and return the profile's YAML text, the profile as loaded back, and the fit warnings."""
    raw = run_isolated(req) if isolated else trace_request(req)
    args_text = ", ".join(f"{k}={v}" for k, v in req.args)
    stem = Path(req.spec.rpartition(":")[0]).stem
    default = default_size or req.sizes[-1]
    notes = [AUTOCAST_NOTE]
    if len(set(raw["params_by_size"])) > 1:
        notes.append(f"parameters change with the size ({min(raw['params_by_size']):,} to "
                     f"{max(raw['params_by_size']):,}): the largest is used")
    meta = {
        "id": model_id or _slug(f"{stem}-{args_text}" if args_text else stem),
        "name": name or (f"{stem} ({args_text}) traced" if args_text else f"{stem} traced"),
        "source": f"traced from {req.spec}" + (f" ({args_text})" if args_text else "")
                  + f" by `python -m planner profile` with torch {raw['torch_version']}",
        "input_size_name": req.size_name, "default_input_size": default,
        "trace": {"torch_version": raw["torch_version"], "date": datetime.now(UTC).date().isoformat(),
                  "factory": req.spec, "args": dict(req.args), "seconds": raw["seconds"], "autocast": AUTOCAST},
        "notes": "\n".join(notes),
    }
    doc, warnings = profile_document(meta, raw, tolerance_pct)
    text = document_text(doc)
    return text, check_document(text, f"{meta['id']}.yaml"), warnings
