"""Feasibility of a job on a GPU or a CPU device, with every reason: hardware precision support, the attention
backend it gets, the PyTorch builds that run it, memory (with the numbers), context length. A CPU is judged by its
instruction-set extensions (planner.inputs.cpus), never by GPU compute capabilities."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from planner.base.schema import sm_label
from planner.engine.memory import MemoryBreakdown
from planner.inputs.builds import COMPATIBLE, NATIVE, Build, BuildMatrix, Fit, sm_text, version_text
from planner.inputs.catalog import GPU
from planner.inputs.jobs import Generate, Train, Workload
from planner.inputs.models import ModelProfile
from planner.inputs.precisions import AttentionBackend, Precision
from planner.inputs.work import Setup


@dataclass(frozen=True)
class Reason:
    code: str  # 'oom', 'memory', 'precision', 'kv_dtype', 'attention', 'pytorch_build', 'context', 'price',
    # 'parallelism', 'device' (runs on the CPU), 'runtime' (the runtime can't run on this device), 'alignment' (GEMM
    # rows not 16-byte aligned: slower kernels than the estimate assumes), 'waves' (a generate batch larger than the
    # KV cache runs a cacheful at a time)
    blocking: bool
    text: str


def _sm_ok(gpu: GPU, need: tuple[int, int] | None) -> bool:
    if need is None or gpu.compute_capability is None:  # AMD: decided by the catalog's rates alone
        return True
    return gpu.compute_capability >= need


def cpu_reasons(cpu: GPU, s: Setup, w: Workload, m: ModelProfile) -> list[Reason]:
    """What a CPU device can't do for this setup, and the note that the plan runs on the CPU: precisions by the
    CPU's matmul paths (a slow fallback is a note), KV-cache dtypes by the same (a generate job only), GPU-only
    attention kernels."""
    spec = cpu.cpu
    what = spec.describe() if spec else f"{cpu.mem_bw_gbps:,.0f} GB/s measured"
    out = [Reason("device", False, f"runs on the CPU, not a GPU: {cpu.name}, {what}")]
    p = s.precision
    slow = spec.slow_path(p.compute_path) if spec else None
    if cpu.peak_tflops(p.compute_path) is None:
        why = spec.why_no_path(p.compute_path) if spec else f"no {p.compute_path} matmul was measured"
        out.append(Reason("precision", True, f"{p.id} can't run on {cpu.name}: {why}; fp32 runs on every CPU"))
    elif slow:
        out.append(Reason("precision", False, f"{p.id} on {cpu.name}: {slow.note}"))
    if p.kernel is not None:
        out.append(Reason("precision", True, f"{p.id} multiplies with its library's CUDA kernels, which a CPU can't "
                          "run: choose int8, int4 or a 16-bit precision"))
    if p.fp8_training is not None:
        out.append(Reason("precision", True, fp8_training_problem(p.id, f"{cpu.name} is a CPU")))
    kv = s.kv_dtype
    if isinstance(w, Generate) and m.can_generate and kv.min_sm is not None and cpu.peak_tflops(kv.id) is None:
        out.append(Reason("kv_dtype", True, f"{kv.id} KV cache: {cpu.name} has no {kv.id} arithmetic"))
    if not runs_on_cpu(s.attention):
        out.append(Reason("attention", True, f"{s.attention.id} is a CUDA kernel for NVIDIA GPUs "
                          f"({_sm_floor(s.attention)}+): on a CPU use sdpa (PyTorch's CPU flash or math kernel)"))
    return out


def runs_on_cpu(a: AttentionBackend) -> bool:
    """Whether an attention choice runs on a CPU: a kernel with no compute-capability floor (one that has a floor is
    a CUDA kernel), or a selector with such a pick (sdpa: PyTorch's CPU flash kernel, else math;
    data/precisions.yaml)."""
    return any(runs_on_cpu(k) for k in a.picks) if a.is_selector else a.min_sm is None


def _sm_floor(a: AttentionBackend) -> str:
    """The lowest compute capability any kernel of `a` needs, as 'SM80'."""
    return sm_label(min(k.min_sm for k in (a.picks or (a,)) if k.min_sm is not None))


def support_reasons(gpu: GPU, s: Setup, w: Workload, m: ModelProfile) -> list[Reason]:
    """What the GPU's (or CPU's) hardware cannot do for this setup: the precision, and for a generate job on a model
    with a KV cache, the KV-cache dtype (training and plain inference keep no KV cache)."""
    if gpu.kind == "cpu":
        return cpu_reasons(gpu, s, w, m)
    out: list[Reason] = []
    p = s.precision
    taken = gpu.run_path(p.compute_path)
    recipe = p.fp8_training
    if recipe is not None and not isinstance(w, Train):
        out.append(Reason("precision", True, f"precision {p.id} is a training recipe (Transformer Engine's FP8 "
                          "GEMMs with BF16 weights); to run FP8 weights for inference choose precision fp8"))
    elif recipe is not None and (gpu.run_path(recipe.gemm_path) != recipe.gemm_path or not _sm_ok(gpu, p.min_sm)):
        out.append(Reason("precision", True, fp8_training_problem(
            p.id, f"{gpu.name} is {gpu.sm} ({gpu.architecture})" if gpu.compute_capability
            else f"{gpu.name} has no {recipe.gemm_path} path in the catalog")))
    elif taken and taken != p.compute_path:  # PyTorch quietly runs the matmuls in another dtype here
        out.append(Reason("precision", False, f"{p.id} matmuls need {sm_label(p.min_sm)}+; {gpu.name} ({gpu.sm}) runs "
                          f"them in {taken}, as PyTorch ignores the {p.id} setting there"))
    elif taken is None or not _sm_ok(gpu, p.min_sm):
        need = f"needs {sm_label(p.min_sm)}+" if p.min_sm else "is not supported"
        out.append(Reason("precision", True, f"{p.id} {need}; {gpu.name} is {gpu.sm} ({gpu.architecture})"
                          f"{_weight_only_hint(p, gpu)}"
                          if gpu.compute_capability
                          else f"{p.id}: {gpu.name} has no {p.compute_path} path in the catalog"))
    if p.runs_as:
        out.append(Reason("precision", False, f"{p.id} on {gpu.name} ({gpu.sm}) {p.runs_as}, not on {p.id} tensor "
                          "cores"))
    if isinstance(w, Generate) and m.can_generate and not _sm_ok(gpu, s.kv_dtype.min_sm):
        out.append(Reason("kv_dtype", True, f"{s.kv_dtype.id} KV cache needs {sm_label(s.kv_dtype.min_sm)}+; "
                          f"{gpu.name} is {gpu.sm}"))
    return out


def _weight_only_hint(p: Precision, gpu: GPU) -> str:
    """Where a refused precision would run on this GPU as weight-only (its runtimes), as a clause; '' if nowhere."""
    w = p.weight_only
    if w is None or not w.covers(gpu.compute_capability):
        return ""
    return (f"; under {', '.join(w.runtimes)} it runs here as weight-only {p.id} ({w.kernel_name}, "
            f"{sm_label(w.min_sm)}-{sm_label(w.max_sm)}): choose that runtime")


def precision_on(gpu: GPU, s: Setup, runtime: str) -> Setup:
    """The setup with its precision as `runtime` runs it on `gpu` (Precision.on_runtime: MXFP4 under llama.cpp runs
    ggml's kernels, SM61+ at fp16; Precision.weight_only_on: FP8 under vLLM on
    Ampere runs weight-only, FP8-Marlin; Precision.on_mma_path: MXFP4 experts under vLLM on Hopper multiply through
    Marlin's mma.sync), its unpack pipelined as that path's runtimes pipeline it; `s` itself where nothing
    changes."""
    return _precision_on(gpu.compute_capability, s, runtime)


@lru_cache(maxsize=256)
def _precision_on(cc: tuple[int, int] | None, s: Setup, runtime: str) -> Setup:
    """precision_on by compute capability: one object per triple (a cache key for the estimate's memo)."""
    p = s.precision.on_runtime(runtime).weight_only_on(cc, runtime).on_mma_path(cc, runtime)
    if p is not s.precision:
        s = replace(s, precision=p, unpack_pipelined=runtime in p.pipelined_on)
    path = s.prompt_era.path_on(cc, prompt_weight_kind(p)) if s.prompt_era is not None else None
    kernel = s.prompt_era.attention_on(cc) if s.prompt_era is not None else None
    if path != s.prompt_path or kernel != s.prompt_attention:
        s = replace(s, prompt_path=path, prompt_attention=kernel, prompt_attention_major=cc[0] if kernel else 0)
    return s


def prompt_weight_kind(p: Precision) -> str:
    """Which of an era's path tables (prompt_gemm.WEIGHT_KINDS) a precision's weights take: 'quantized' for a
    format the runtime unpacks, 'f16' for 16-bit float weights; '' for the others (no path)."""
    if p.dequant_ops_per_weight:
        return "quantized"
    return "f16" if p.compute_path == "fp16" and p.weight_bytes == 2 else ""


def fp8_training_problem(precision: str, device: str) -> str:
    """Why FP8 training (Transformer Engine) can't run on `device` (described by the caller), naming the field."""
    return (f"precision {precision}: FP8 training runs its GEMMs on FP8 tensor cores (Transformer Engine: Ada SM89, "
            f"Hopper SM90, Blackwell SM100+); {device}: choose precision bf16")


# ---------------------------------------------------------------- attention backends


def _platform(gpu: GPU) -> str:
    """'cuda' (NVIDIA, has a compute capability), 'rocm' (AMD) or 'other' (a measured CPU or Apple device)."""
    if gpu.compute_capability is not None:
        return "cuda"
    return "rocm" if gpu.vendor == "AMD" else "other"


def attention_dtype(s: Setup) -> str:
    """The dtype attention runs in: the activation path, with TF32 matmuls taking fp32 tensors."""
    path = s.attention_path
    return "fp32" if path == "tf32" else path


def _range(k: AttentionBackend) -> str:
    lo, hi = k.min_sm, k.max_sm
    if lo and hi:
        return f"{sm_label(lo)}-{sm_label(hi)}" if lo != hi else f"{sm_label(lo)} only"
    return f"{sm_label(lo)}+" if lo else f"up to {sm_label(hi)}"


def kernel_problem(k: AttentionBackend, cc: tuple[int, int] | None, platform: str, dtype: str,
                   head_dim: int | None, pytorch: tuple[int, ...] | None) -> str | None:
    """Why kernel `k` can't run here (None when it can): PyTorch version, vendor, SM range, dtype, head dim."""
    if pytorch and k.min_pytorch and pytorch < k.min_pytorch:
        return f"{k.id} needs PyTorch {version_text(k.min_pytorch)}+ (the pinned PyTorch is {version_text(pytorch)})"
    if platform == "rocm" and not k.amd:
        return f"{k.id} has no ROCm (AMD) build"
    if platform == "cuda" and ((k.min_sm and cc < k.min_sm) or (k.max_sm and cc > k.max_sm)):
        return f"{k.id} runs on {_range(k)} only"
    if dtype not in k.dtypes:
        return f"{k.id} takes {'/'.join(k.dtypes)}, not {dtype}"
    if head_dim and k.max_head_dim and head_dim > k.max_head_dim:
        return f"{k.id} takes head dims up to {k.max_head_dim}, the model's is {head_dim}"
    return None


def _describe(k: AttentionBackend, cc: tuple[int, int] | None = None) -> str:
    memory = "O(S^2) scores in DRAM" if k.scores_materialized else "O(S) memory"
    fraction = k.peak_fraction_on(cc)
    rate = (f" ({fraction:.2f} of the datasheet peak here: FlashAttention-2 reaches "
            f"{fraction / k.speed_vs_fa2:.2f} on this GPU generation)" if fraction else "")
    return f"{memory}, {k.speed_vs_fa2:.2f}x FlashAttention-2's speed{rate}"


@dataclass(frozen=True)
class AttentionOn:
    """The kernel a plan's attention choice runs as on one GPU (None: it can't run there), and the reason to show."""

    kernel: AttentionBackend | None
    reason: Reason


@lru_cache(maxsize=4096)
def resolve_attention(choice: AttentionBackend, fallback: AttentionBackend, cc: tuple[int, int] | None,
                      platform: str, dtype: str, head_dim: int | None,
                      pytorch: tuple[int, ...] | None) -> AttentionOn:
    """What `choice` runs as on a GPU of compute capability `cc` (None on AMD) for `dtype` and `head_dim`: a kernel
    as itself, a selector as the first of its picks that runs (as PyTorch's SDPA dispatcher or xFormers does), in the
    priority list of the selector's release built for the pinned PyTorch (unpinned: its newest).
    When nothing runs, the blocking reason names what `fallback` (sdpa) would run instead."""
    where = (sm_label(cc) if cc else "ROCm" if platform == "rocm" else "this device") + f", {dtype}" + (
        f", head dim {head_dim}" if head_dim else ", head dim not known")
    if choice.min_pytorch and pytorch and pytorch < choice.min_pytorch:
        problems = [f"{choice.id} needs PyTorch {version_text(choice.min_pytorch)}+ (the pinned PyTorch is "
                    f"{version_text(pytorch)})"]
    else:
        problems = []
        release = choice.release_for(pytorch)
        name = f"{choice.id} {release.version}" if release else choice.id
        for k in choice.picks_for(pytorch) or (choice,):
            why = kernel_problem(k, cc, platform, dtype, head_dim, pytorch)
            if why is None:
                picked = f"{name} picks {k.id}" if choice.is_selector else k.id
                return AttentionOn(k, Reason("attention", False, f"attention: {picked} on {where}: {_describe(k, cc)}"))
            problems.append(why)
    alt = None if fallback is choice else resolve_attention(fallback, fallback, cc, platform, dtype, head_dim, pytorch)
    instead = (f"use {fallback.id} instead (it runs {alt.kernel.id} here)" if alt and alt.kernel
               else "use manual attention instead")
    return AttentionOn(None, Reason("attention", True, f"{'; '.join(problems)} ({where}): {instead}"))


def attention_on(gpu: GPU, s: Setup, head_dim: int | None, fallback: AttentionBackend,
                 pinned: tuple[Build, ...] = ()) -> AttentionOn:
    """The plan's attention choice (s.attention) resolved on `gpu`."""
    return resolve_attention(s.attention, fallback, gpu.compute_capability, _platform(gpu), attention_dtype(s),
                             head_dim, pinned[0].version if pinned else None)


# ---------------------------------------------------------------- PyTorch builds


def _variants(builds: tuple[Build, ...]) -> str:
    return "/".join("+" + b.variant for b in builds)


def build_reasons(matrix: BuildMatrix, gpu: GPU, pinned: tuple[Build, ...]) -> tuple[Reason, ...]:
    """Which PyTorch builds run the GPU: the oldest one and the latest version's variants that do (a note), and with
    a pinned version, whether it runs it (blocking when it doesn't). Nothing for a device that is not a GPU."""
    platform = _platform(gpu)
    if platform == "other":
        return ()
    return _build_reasons(matrix, gpu.compute_capability, gpu.gfx_target, gpu.name, platform, pinned)


@lru_cache(maxsize=1024)
def _build_reasons(matrix: BuildMatrix, cc: tuple[int, int] | None, gfx: str | None, name: str, platform: str,
                   pinned: tuple[Build, ...]) -> tuple[Reason, ...]:
    arch = sm_label(cc) if cc else gfx
    oldest = matrix.oldest_running(cc, gfx)
    if oldest is None:
        return (Reason("pytorch_build", True, f"no official PyTorch build in the matrix ships kernels for {arch}"),)
    first, fit = oldest
    latest = tuple(b for b in matrix.of_version(matrix.latest) if b.fit(cc, gfx))
    kind = "a ROCm build (CUDA builds don't run AMD GPUs)" if platform == "rocm" else "a CUDA build"
    note = (f"PyTorch for {arch} needs {kind}: the oldest that runs it is {first.id} ({first.toolkit_text})"
            f"{_via(fit)}; the latest, "
            f"{version_text(matrix.latest)}, " + (f"as {_variants(latest)}" if latest else "has no build for it"))
    out = [Reason("pytorch_build", False, note)]
    if pinned:
        out.append(_pinned_reason(cc, gfx, name, arch, pinned, first))
    return tuple(out)


def _via(fit: Fit) -> str:
    if fit.how == NATIVE:
        return ""
    return f" with its {fit.arch} kernels" if fit.how == COMPATIBLE else f" by JIT-compiling its {fit.arch} PTX"


def _pinned_reason(cc: tuple[int, int] | None, gfx: str | None, name: str, arch: str, pinned: tuple[Build, ...],
                   oldest: Build) -> Reason:
    """Whether the pinned build (or any variant of a pinned version) runs the GPU."""
    fits = [(b, f) for b in pinned if (f := b.fit(cc, gfx))]
    native = [(b, f) for b, f in fits if f.how == NATIVE]
    if native:
        b, f = native[0]
        return Reason("pytorch_build", False, f"pinned PyTorch {b.id} runs the {name}: it ships {f.arch} kernels")
    if fits:
        b, f = fits[0]
        how = (f"with its {f.arch} kernels (binary compatible within a major version; it ships no {sm_text(cc)} "
               "kernels, so none tuned for this GPU)" if f.how == COMPATIBLE else
               f"by JIT-compiling its {f.arch} PTX at start-up")
        return Reason("pytorch_build", False, f"pinned PyTorch {b.id} runs the {name} {how}")
    label = pinned[0].id if len(pinned) == 1 else f"{version_text(pinned[0].version)} ({_variants(pinned)})"
    needed = "rocm" if gfx else "cuda"
    if all(b.platform != needed for b in pinned):
        why = (f"pinned PyTorch {label} is a {pinned[0].toolkit_text.split()[0]} build; the {name} needs a "
               f"{'ROCm' if gfx else 'CUDA'} build")
    else:
        ships = "; ".join(f"{b.id} ships {b.arch_list()}" for b in pinned)
        why = (f"pinned PyTorch {label} has no kernels for {arch} ({ships}): PyTorch can't use the {name} and "
               "falls back to the CPU (or fails with 'no kernel image is available for execution on the device')")
    return Reason("pytorch_build", True, f"{why}; the oldest build that runs {arch} is {oldest.id}")


# A plan that fills this much of its usable memory is said to be close to the limit (a note, not a refusal): a few
# percent is what a longer sequence, a larger workspace or a fragmentation spike takes.
NEAR_LIMIT_FRACTION = 0.95


def capacity_text(gpu: GPU, target: float) -> str:
    """How the usable memory follows from the card's capacity, e.g. '90 % of the 48.3 GB an L40S reports (48 GiB
    less 1/16 kept for ECC)'."""
    reported = gpu.reported_vram_gb
    why = (f"{gpu.vram_gib:g} GiB = {gpu.vram_gb:.1f} GB, of which the driver reports {gpu.reported_vram_mib:,.0f} MiB"
           if gpu.reported_vram_mib is not None else f"{gpu.vram_gib:g} GiB")
    return f"{target:.0%} of the {reported:.1f} GB it reports ({why})"


def memory_reason(gpu: GPU, mem: MemoryBreakdown, batch: int, n_gpus: int, usable_gb: float,
                  target: float) -> Reason | None:
    """A refusal when the plan needs more than the usable memory; a note when it fills nearly all of it."""
    per = " per GPU" if n_gpus > 1 else ""
    need = mem.total_gb
    if need > usable_gb:
        parts = ", ".join(f"{i.name} {i.gb:.2f}" for i in mem.items if i.gb >= 0.005)
        return Reason("oom", True, f"needs {need:.1f} GB{per} at batch {batch}, usable {usable_gb:.1f} GB "
                      f"({capacity_text(gpu, target)}; {need - usable_gb:.1f} GB short; {parts} GB)")
    if need > NEAR_LIMIT_FRACTION * usable_gb:
        return Reason("memory", False, f"close to the limit: {need:.1f} of {usable_gb:.1f} usable GB{per} at batch "
                      f"{batch} ({need / usable_gb:.0%}); {usable_gb - need:.2f} GB of headroom")
    return None


def context_reason(m: ModelProfile, w: Workload) -> Reason | None:
    limit = m.trained_context
    if limit is not None and w.input_size > limit:
        return Reason("context", False, f"{w.input_size} {m.input_size_name} exceed {m.name}'s trained context of "
                                        f"{limit}")
    return None
