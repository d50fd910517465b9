"""Feasibility reasons: precision vs compute capability, memory with numbers, PyTorch builds, attention."""

from dataclasses import replace

import pytest

from planner.inputs.catalog import load_catalog
from planner.engine.plan import Plan
from planner.engine.estimate import estimate_gpu
from planner.inputs.models import load_models
from planner.inputs.jobs import Generate, Infer, Train
from planner.inputs.facts import load_facts

FACTS = load_facts()


def _est(model, gpu, precision="bf16", workload=None, **kw):
    plan = Plan(load_models().get(model), workload or Generate(1, 128, 128), precision, **kw)
    return estimate_gpu(plan, load_catalog().get(gpu), FACTS)


@pytest.mark.parametrize("gpu, sm", [("v100-sxm2-16gb", "SM70"), ("t4", "SM75")])
def test_bf16_is_refused_on_volta_and_turing(gpu, sm):
    e = _est("cfdna-gen", gpu, "bf16")
    assert not e.feasible
    text = " ".join(r.text for r in e.reasons if r.code == "precision")
    assert "bf16 needs SM80+" in text and sm in text


def test_fp16_is_fine_on_v100():
    assert _est("cfdna-gen", "v100-sxm2-16gb", "fp16").feasible


def test_fp8_needs_ada_or_hopper():
    assert not _est("cfdna-gen", "a100-sxm-80gb", "fp8").feasible
    assert _est("cfdna-gen", "h100-sxm", "fp8").feasible


def test_llama3_70b_fp16_does_not_fit_24gb_and_says_by_how_much():
    e = _est("llama-3-70b", "rtx-4090", "fp16")
    assert not e.feasible
    oom = next(r for r in e.reasons if r.code == "oom")
    weights_gb = 70_553_706_496 * 2 / 1e9  # 141.1 GB of fp16 weights alone
    capacity_gb = 24 * 2**30 / 1e9  # "24 GB" of GDDR6X is 24 GiB = 25.8 GB
    usable_gb = 0.90 * capacity_gb  # the default target: 90 % of what the card reports (no ECC reserve on GeForce)
    assert f"usable {usable_gb:.1f} GB (90% of the {capacity_gb:.1f} GB it reports (24 GiB)" in oom.text
    assert f"weights {weights_gb:.2f}" in oom.text
    short = float(oom.text.split(" GB short")[0].rsplit("; ", 1)[1])
    assert short >= weights_gb - usable_gb


def test_rtx_5090_carries_its_pytorch_requirement():
    e = _est("llm-7b-seed002", "rtx-5090", "fp16")
    assert e.feasible
    build = [r for r in e.reasons if r.code == "pytorch_build"]
    assert build and "2.7" in build[0].text and "12.8" in build[0].text and not build[0].blocking


def test_flash_attention_2_needs_ampere():
    assert not _est("cfdna-gen", "v100-sxm2-32gb", "fp16", attention="flash-attn-2").feasible
    assert _est("cfdna-gen", "rtx-a5000", "fp16", attention="flash-attn-2").feasible


def test_volta_notes_that_only_the_cuda_12_6_build_of_the_latest_pytorch_runs_it():
    e = _est("cfdna-gen", "v100-sxm2-16gb", "fp16")
    # PyTorch 2.14 ships cu126 (5.0 ... 9.0), cu130 and cu132 (7.5 ... 12.0): only cu126 has sm_70 (pytorch#190355)
    note = next(r.text for r in e.reasons if r.code == "pytorch_build")
    assert note.endswith("the latest, 2.14.0, as +cu126")


# ---------------------------------------------------------------- KV cache only where there is one


def _plan_on(gpu, workload, precision="fp16", model="cfdna-gen", **kw):
    plan = Plan(load_models().get(model), workload, precision, **kw)
    return estimate_gpu(plan, load_catalog().get(gpu), FACTS)


def test_training_and_inference_are_not_refused_for_a_kv_cache_they_do_not_keep():
    # T4 is SM75; a bf16 KV cache needs SM80+ -- but only a generate job keeps a KV cache
    train = _plan_on("t4", Train(1000, 256, 1), kv_dtype="bf16")
    infer = _plan_on("t4", Infer(1000, 256), kv_dtype="bf16")
    generate = _plan_on("t4", Generate(1000, 1, 255), kv_dtype="bf16")
    assert not any(r.code == "kv_dtype" for r in train.reasons + infer.reasons) and train.feasible
    assert any(r.code == "kv_dtype" and r.blocking for r in generate.reasons) and not generate.feasible


# ---------------------------------------------------------------- attention backends per GPU


def _attention(e):
    return next(r for r in e.reasons if r.code == "attention")


def test_flash_attention_2_is_refused_on_blackwell_and_sdpa_is_named_instead():
    e = _plan_on("rtx-5090", Train(1000, 1024, 1), attention="flash-attn-2")
    r = _attention(e)
    # FA2 README: Ampere, Ada, Hopper (SM80-SM90), 2.7.3+ on B200/GB200 (SM100); RTX 5090 is sm_120; SDPA's flash
    # kernel covers [sm80, sm121]
    assert r.blocking and not e.feasible
    assert "flash-attn-2 runs on SM80-SM100" in r.text and "SM120" in r.text
    assert "use sdpa instead (it runs sdpa-flash here)" in r.text


def test_flash_attention_2_on_turing_names_the_memory_efficient_kernel():
    r = _attention(_plan_on("t4", Train(1000, 1024, 1), attention="flash-attn-2"))
    assert r.blocking and "SM75" in r.text and "sdpa-efficient" in r.text  # SDPA flash needs sm80+


@pytest.mark.parametrize("gpu, precision, kernel", [
    ("a100-sxm-80gb", "fp16", "sdpa-flash"),   # SM80, fp16, head dim 64 <= 256: flash
    ("rtx-5090", "bf16", "sdpa-flash"),        # SM120 is within [sm80, sm121]
    ("t4", "fp16", "sdpa-efficient"),          # SM75 < sm80: memory-efficient (sm50+)
    ("v100-sxm2-16gb", "fp16", "sdpa-efficient"),
    ("a100-sxm-80gb", "fp32", "sdpa-efficient"),  # flash takes fp16/bf16 only; memory-efficient takes fp32
    ("a100-sxm-80gb", "tf32", "sdpa-efficient"),  # TF32 matmuls on fp32 tensors: attention sees fp32
    ("mi300x", "fp16", "sdpa-flash"),          # ROCm: AOTriton flash kernel on MI300
])
def test_auto_picks_what_pytorch_sdpa_would_on_each_gpu(gpu, precision, kernel):
    e = _plan_on(gpu, Train(1000, 256, 1), precision, attention="auto")
    assert e.setup.attention.id == kernel
    r = _attention(e)
    assert not r.blocking and f"sdpa picks {kernel}" in r.text


def test_a_head_dim_over_256_sends_sdpa_to_the_memory_efficient_kernel():
    wide = replace(load_models().get("cfdna-gen"), head_dim=512)  # flash: head_dim <= 256 (sdp_utils.cpp)
    e = estimate_gpu(Plan(wide, Train(100, 256, 1), "fp16"), load_catalog().get("h100-sxm"), FACTS)
    assert e.setup.attention.id == "sdpa-efficient" and "head dim 512" in _attention(e).text
    fa1 = estimate_gpu(Plan(wide, Train(100, 256, 1), "fp16", attention="flash-attn"), load_catalog().get("h100-sxm"),
                       FACTS)
    assert _attention(fa1).blocking and "head dims up to 128" in _attention(fa1).text  # FlashAttention 1.x README


def test_flash_attention_3_runs_on_hopper_only_and_not_on_amd():
    assert _plan_on("h100-sxm", Train(1000, 256, 1), attention="flash-attn-3").feasible
    assert _attention(_plan_on("a100-sxm-80gb", Train(1000, 256, 1), attention="flash-attn-3")).blocking
    r = _attention(_plan_on("mi300x", Train(1000, 256, 1), attention="flash-attn-3"))
    assert r.blocking and "no ROCm (AMD) build" in r.text


def test_flash_attention_1_covers_turing():
    e = _plan_on("t4", Train(1000, 256, 1), attention="flash-attn")  # 1.x README: Turing, Ampere, Ada, Hopper
    assert e.feasible and e.setup.attention.id == "flash-attn"


def _xformers(gpu, pytorch=None, precision="fp16"):
    return _plan_on(gpu, Train(100, 256, 1), precision, attention="xformers", pytorch=pytorch)


def test_xformers_before_0_0_29_uses_its_flash_op_from_ampere_and_cutlass_below():
    # 0.0.21-0.0.28 (PyTorch 2.0.1-2.5.x): [bundled FlashAttention-2, CUTLASS from SM60]
    assert _xformers("rtx-3090", "2.5.1+cu124").setup.attention.id == "flash-attn-2"
    assert _xformers("h100-sxm", "2.5.1+cu124").setup.attention.id == "flash-attn-2"
    assert _xformers("v100-sxm2-16gb", "2.5.1+cu124").setup.attention.id == "xformers-cutlass"


def test_xformers_puts_flash_attention_3_first_on_hopper_from_0_0_29():
    # CHANGELOG 0.0.29: FA3 used by default when available; 0.0.29.post2 is the wheel for PyTorch 2.6.0
    for pin in ("2.6.0+cu126", "2.8.0+cu128"):
        e = _xformers("h100-sxm", pin)
        assert e.setup.attention.id == "flash-attn-3"
    assert "xformers 0.0.29.post2 picks flash-attn-3" in _attention(_xformers("h100-sxm", "2.6.0+cu126")).text
    assert _xformers("a100-sxm4-80gb", "2.6.0+cu126").setup.attention.id == "flash-attn-2"  # FA3: SM90 only


def test_xformers_0_0_33_skips_flash_attention_3_on_hopper():
    # flash3.py of v0.0.33 refuses any device above (8, 0) ('too new'): H100 falls to the flash op, PyTorch's kernel
    e = _xformers("h100-sxm", "2.9.1+cu128")
    assert e.setup.attention.id == "sdpa-flash" and "xformers 0.0.33 picks sdpa-flash" in _attention(e).text


def test_xformers_from_0_0_31_drops_volta_and_from_0_0_33_caps_cutlass_at_hopper():
    v100 = _attention(_xformers("v100-sxm2-16gb"))  # unpinned: the newest release (0.0.35): CUTLASS SM75-SM90
    assert v100.blocking and "xformers-cutlass runs on SM75-SM90 only" in v100.text
    assert _xformers("t4").setup.attention.id == "xformers-cutlass"  # SM75, fp16: below PyTorch's flash (SM80)
    assert _xformers("b200").setup.attention.id == "sdpa-flash"  # 16-bit: PyTorch's flash kernel runs SM80-SM121
    fp32 = _attention(_xformers("b200", precision="fp32"))  # fp32: no flash kernel; CUTLASS stops at SM90
    assert fp32.blocking and "SM75-SM90 only" in fp32.text
    assert _xformers("b200", "2.8.0+cu128", precision="fp32").setup.attention.id == "xformers-cutlass"  # 0.0.31: no cap


def test_xformers_on_pytorch_1_13_bundles_flash_attention_1():
    r = _attention(_xformers("rtx-a5000", "1.13.1+cu116"))
    assert not r.blocking  # 0.0.16 is built for 1.13
    assert _xformers("rtx-a5000", "1.13.1+cu116").setup.attention.id == "flash-attn"  # FlashAttention 1.x bundled


def test_sdpa_needs_pytorch_2_so_a_1_13_pin_leaves_manual_attention():
    e = _plan_on("rtx-a5000", Train(1000, 256, 1), attention="sdpa", pytorch="1.13.1+cu116")
    r = _attention(e)
    assert r.blocking and "sdpa needs PyTorch 2.0+" in r.text and "use manual attention instead" in r.text
    assert _plan_on("rtx-a5000", Train(1000, 256, 1), attention="manual", pytorch="1.13.1+cu116").feasible


# ---------------------------------------------------------------- PyTorch builds


def _builds(e):
    return [r for r in e.reasons if r.code == "pytorch_build"]


def test_every_gpu_names_the_oldest_build_that_runs_it():
    # H100 is sm_90: the first official sm_90 kernels are in 2.0.1+cu118 (1.13 and cu117 builds stop at sm_86)
    note = _builds(_est("cfdna-gen", "h100-sxm", "fp16"))[0]
    assert not note.blocking and "the oldest that runs it is 2.0.1+cu118 (CUDA 11.8)" in note.text


def test_amd_gpus_are_told_to_use_a_rocm_build():
    note = _builds(_est("cfdna-gen", "mi300x", "fp16"))[0]
    assert "needs a ROCm build" in note.text and "2.3.1+rocm6.0" in note.text and "+rocm7.14" in note.text
    pinned = _plan_on("mi300x", Train(100, 256, 1), pytorch="2.14.0+cu132")
    assert any(r.blocking and "is a CUDA build" in r.text for r in _builds(pinned)) and not pinned.feasible


SEA = dict(model="sea", precision="fp32", attention="manual", pytorch="1.13.1+cu116", batch=1)


@pytest.mark.parametrize("gpu", ["rtx-a5000", "rtx-a6000", "v100-sxm2-32gb"])
def test_seed_000_pytorch_1_13_1_cu116_runs_the_seeds_gpus(gpu):
    # 1.13.1+cu116 ships sm_70 and sm_86 kernels (moi90 table): A5000/A6000 are SM86, V100 SM70
    e = _plan_on(gpu, Infer(10, 1000), **SEA)
    pin = _builds(e)[-1]
    assert e.feasible and not pin.blocking and "it ships sm_" in pin.text


def test_seed_000_pin_does_not_run_hopper():
    # H100 is sm_90; 1.13.1+cu116 ships sm_37 ... sm_86 and no PTX: no kernel image for sm_90 (hyena-dna#76)
    e = _plan_on("h100-sxm", Infer(10, 1000), **SEA)
    pin = _builds(e)[-1]
    assert not e.feasible and pin.blocking and "no kernels for SM90" in pin.text and "2.0.1+cu118" in pin.text


@pytest.mark.parametrize("gpu", ["rtx-4090", "l40s"])
def test_seed_000_pin_runs_ada_only_with_its_ampere_kernels(gpu):
    # Ada is sm_89: no official build ships sm_89, but sm_86 cubins run on 8.9 (same major, lower minor: CUDA binary
    # compatibility; torch's own _check_cubins accepts it), so 1.13.1+cu116 runs -- untuned, which the note says
    e = _plan_on(gpu, Infer(10, 1000), **SEA)
    pin = _builds(e)[-1]
    assert e.feasible and not pin.blocking and "with its sm_86 kernels" in pin.text


def test_seed_002_pytorch_2_4_1_falls_back_to_the_cpu_on_an_rtx_5090():
    # seed 002: "PyTorch 2.4.1 only supports up to sm_90 ... falls back to CPU"; every 2.4.1 variant stops at sm_90
    llm = dict(model="llm-7b-seed002", precision="fp16", pytorch="2.4.1", batch=1)
    e = _plan_on("rtx-5090", Generate(1, 100, 100), **llm)
    pin = _builds(e)[-1]
    assert not e.feasible and pin.blocking and "falls back to the CPU" in pin.text and "2.7.0+cu128" in pin.text
    assert _plan_on("rtx-4090", Generate(1, 100, 100), **llm).feasible


def test_tf32_on_a_gpu_without_tf32_tensor_cores_runs_in_fp32_with_a_note():
    """PyTorch applies allow_tf32 / float32_matmul_precision('medium') only on Ampere and later (PyTorch docs, CUDA
    semantics): SEA's setting speeds up the A5000's matmuls and leaves the V100's in fp32."""
    v100_tf32 = _est("sea", "v100-sxm2-32gb", "tf32", workload=Infer(10, 100))
    v100_fp32 = _est("sea", "v100-sxm2-32gb", "fp32", workload=Infer(10, 100))
    assert v100_tf32.feasible and v100_tf32.seconds == pytest.approx(v100_fp32.seconds)
    note = next(r for r in v100_tf32.reasons if r.code == "precision")
    assert not note.blocking and "runs them in fp32" in note.text
    a5000 = _est("sea", "rtx-a5000", "tf32", workload=Infer(10, 100))
    matmuls = next(g for ph in a5000.phases for g in ph.groups if g.name.startswith("matmuls"))
    assert matmuls.peak_tflops == 55.6  # the A5000's dense TF32 rate (data/gpus.yaml), not its 27.8 fp32
    assert not any(r.code == "precision" for r in a5000.reasons)


# ---------------------------------------------------------------- on a CPU device (data/cpus.yaml)

def _codes(e, blocking=None):
    return {r.code for r in e.reasons if blocking is None or r.blocking == blocking}


def test_a_cpu_estimate_says_it_runs_on_the_cpu():
    e = _est("llama-2-7b", "amd-epyc-9654", "bf16")
    assert e.feasible
    note = next(r for r in e.reasons if r.code == "device")
    assert not note.blocking and "runs on the CPU" in note.text and "96 cores" in note.text


def test_cpu_precision_follows_its_instruction_set_not_a_compute_capability():
    assert _codes(_est("cfdna-gen", "amd-epyc-9654", "bf16"), True) == set()  # AVX512-BF16
    slow = _est("cfdna-gen", "amd-epyc-9654", "fp16")  # no AVX512-FP16: runs, slowly, and says so
    assert slow.feasible and any(r.code == "precision" and "AVX512-FP16" in r.text for r in slow.reasons)
    assert _codes(_est("cfdna-gen", "intel-xeon-8480-plus", "fp16")) == {"device", "price"}  # AVX512-FP16: native
    no_int8 = _est("cfdna-gen", "amd-epyc-7763", "int8-w8a8")  # int8 matmuls; Zen 3: no VNNI, no AMX
    assert not no_int8.feasible and any("VNNI" in r.text for r in no_int8.reasons if r.code == "precision")
    for precision in ("tf32", "fp8"):  # tensor-core formats: no CPU runs them
        assert "precision" in _codes(_est("cfdna-gen", "amd-ryzen-9-7950x", precision), True)
    assert all("SM" not in r.text for r in no_int8.reasons)


def test_gpu_only_attention_kernels_are_refused_on_a_cpu():
    e = _est("cfdna-gen", "amd-ryzen-9-7950x", "bf16", attention="flash-attn-2")
    assert not e.feasible and "sdpa" in next(r.text for r in e.reasons if r.code == "attention")
    for backend in ("sdpa", "sdpa-math", "manual"):
        assert "attention" not in _codes(_est("cfdna-gen", "amd-ryzen-9-7950x", "bf16", attention=backend))
    # a selector whose every pick is a CUDA kernel (xFormers' newest release: PyTorch's flash kernel SM80+, its
    # CUTLASS kernel SM75+ since 0.0.31 dropped Volta)
    xf = _est("cfdna-gen", "amd-ryzen-9-7950x", "bf16", attention="xformers")
    assert not xf.feasible and "SM75+" in next(r.text for r in xf.reasons if r.code == "attention")


def test_kv_cache_dtype_needs_the_cpu_arithmetic():
    assert "kv_dtype" in _codes(_est("cfdna-gen", "amd-epyc-9654", "bf16", kv_dtype="fp8"), True)
    assert "kv_dtype" not in _codes(_est("cfdna-gen", "amd-epyc-7763", "fp32", kv_dtype="bf16"))  # slow, not absent


def test_gpu_build_rules_and_gpu_only_runtimes_on_a_cpu():
    e = _est("cfdna-gen", "amd-ryzen-9-7950x", "bf16")
    assert "pytorch_build" not in _codes(e)  # the sm_120 rule is about the RTX 5090, not its host CPU
    vllm = _est("cfdna-gen", "amd-ryzen-9-7950x", "bf16", runtime="vllm")
    why = next(r.text for r in vllm.reasons if r.code == "runtime")
    assert not vllm.feasible and "vLLM does not run on a CPU" in why
    assert _est("cfdna-gen", "amd-ryzen-9-7950x", "bf16", runtime="llama.cpp").feasible


def test_a_quantization_librarys_cuda_kernels_need_a_gpu_and_its_runtime():
    """bitsandbytes and exllama run their own CUDA kernels from Hugging Face transformers (eager PyTorch): refused on
    a CPU, under another runtime, and (LLM.int8) below Turing (bitsandbytes 0.45 installation docs)."""
    cpu = _est("llama-2-7b", "amd-epyc-9654", "bnb-nf4")
    assert not cpu.feasible and "CUDA kernels" in next(r.text for r in cpu.reasons if r.blocking)
    vllm = _est("llama-2-7b", "h100-sxm", "gptq-exllama", runtime="llama.cpp")
    assert not vllm.feasible and "only under pytorch-eager" in next(r.text for r in vllm.reasons if r.blocking)
    assert not _est("llama-2-7b", "v100-sxm2-32gb", "bnb-int8").feasible
    assert _est("llama-2-7b", "t4", "bnb-int8").feasible and _est("llama-2-7b", "t4", "bnb-nf4-dq").feasible


def test_a_cpu_device_is_one_host():
    e = _est("cfdna-gen", "amd-epyc-9654", "bf16", gpus=2)
    assert not e.feasible and "parallelism" in _codes(e, True)
