"""Quantization libraries' own kernels (AutoAWQ as its fused modules run it) and GeForce's fp16-accumulate rate
(exllama, llama.cpp), each derived by hand from the kernel source quoted in data/precisions.yaml and
data/runtimes.yaml (awq-gemv, awq-gemm, gptq-exllama, llama.cpp) and the GPU datasheets."""

from dataclasses import replace

import pytest

from planner.engine.estimate import estimate_gpu
from planner.engine.plan import Plan, resolve_setup
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models
from planner.validation.measured import FRAMEWORK_RUNTIME, awq_precision, load_measurements

FACTS = load_facts()
RTX_4090 = FACTS.catalog.get("rtx-4090")
# the RTX 4090's 32-bit integer instructions per second: its fp32 matmul ceiling at the 64 INT32 lanes per 128 fp32
# of compute capability 8.9 (CUDA C Programming Guide), in instructions (a FLOP-equivalent is 2)
INT_RATE_4090 = RTX_4090.ceiling_tflops("fp32") * 0.5 / 2 * 1e12
# Llama-2-7B's layer matrices (32 layers: Q, K, V, O of 4096 x 4096; gate, up, down of 4096 x 11008) and the gate
# and up projections among them
LLAMA2_7B_LAYERS = 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008)
LLAMA2_7B_GATE_UP = 32 * 2 * 4096 * 11008
# Mistral-7B: Q and O 4096 x 4096, K and V 4096 x 1024 (8 KV heads), gate, up, down 4096 x 14336
MISTRAL_7B_LAYERS = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336)


def _phase(model: str, precision: str, workload: Generate, name: str, runtime: str = "autoawq", gpu=RTX_4090):
    plan = Plan(load_models().get(model), workload, precision, runtime=runtime, batch=workload.n_sequences)
    return next(p for p in estimate_gpu(plan, gpu, FACTS).phases if p.name == name)


def _group(phase, name: str):
    return next(g for g in phase.groups if g.name == name)


def test_awq_gemv_decode_hides_its_per_token_instructions_under_the_weight_stream():
    """gemv_forward_cuda at batch 1: 11.5 integer-slot instructions per weight (mask, shift, two conversions at 4,
    three fp32 operations at 1/2) = 6.476e9 x 11.5 / 20.66e12 = 3.60 ms, under the 3.4 GB weight stream (~4 ms at
    the runtime's 0.85 of 1008 GB/s): the linear layers take the stream's time, not the sum."""
    decode = _phase("llama-2-7b", "awq-gemv", Generate(1, 64, 64), "decode")
    assert not any(g.name.startswith("quantized GEMV") for g in decode.groups)  # folded into the matmuls
    linear = _group(decode, "linear layers")
    assert linear.compute_s / decode.steps == pytest.approx(LLAMA2_7B_LAYERS * 11.5 / INT_RATE_4090, rel=1e-9)
    assert linear.compute_s / decode.steps == pytest.approx(3.60e-3, rel=0.01)
    assert linear.time_s == pytest.approx(linear.memory_s, rel=1e-12) and linear.compute_s < linear.memory_s
    assert linear.achieved_gbps == pytest.approx(1008 * 0.85)  # autoawq's GDDR prior, untuned


def test_autoawqs_fused_mlp_multiplies_a_prompts_gate_and_up_one_token_at_a_time():
    """A 64-token prompt with a GEMV checkpoint: AutoAWQ's QuantLlamaMLP keeps gate and up on gemv_forward_cuda
    (64 x 11.5 instructions per weight: 2 x 11.5 x 64 x 2.886e9 FLOP-equivalents = 101 ms on a 4090), while QKV, O
    and down go through gemmv2's 128-row tile (11 instructions per weight, once). Transformers' unfused AWQ linears
    (pytorch-eager) send all of them to gemmv2 above 8 rows."""
    prefill = _phase("llama-2-7b", "awq-gemv", Generate(1, 64, 1), "prefill")
    linear, unpack = _group(prefill, "linear layers"), _group(prefill, "dequantize weights")
    gemv_flops = 2 * 11.5 * 64 * LLAMA2_7B_GATE_UP
    assert not any(g.name.startswith("quantized GEMV") for g in prefill.groups)  # folded onto the matmuls
    assert "gate and up projections" in linear.formula
    assert linear.compute_s == pytest.approx(gemv_flops / 2 / INT_RATE_4090, rel=1e-9)
    assert linear.compute_s == pytest.approx(0.1028, rel=0.01)
    assert unpack.flops == pytest.approx(2 * 11 * (LLAMA2_7B_LAYERS - LLAMA2_7B_GATE_UP))  # one 128-row tile
    eager = _phase("llama-2-7b", "awq-gemv", Generate(1, 64, 1), "prefill", runtime="pytorch-eager")
    assert "gate and up" not in _group(eager, "linear layers").formula
    assert _group(eager, "dequantize weights").flops == pytest.approx(2 * 11 * LLAMA2_7B_LAYERS)


def test_awq_gemm_prefill_unpacks_per_16_row_tile_at_its_own_mma_rate_with_split_k_partials():
    """gemm_forward_cuda over a 2048-token prompt: 2048 / 16 = 128 tiles, each unpacking every weight at 1.375
    slots (5 integer + 12 half2 instructions per 8 weights); its MMAs at 0.43 of the 4090's matmul ceiling; 8
    split-K partial outputs of 2048 x (6144 + 4096 + 2 x 14336 + 4096) per layer written and read back in fp16; one
    more kernel (the sum) per call: 7 linear modules per layer as the planner counts them (Q, K, V, O, gate, up,
    down; AutoAWQ's fused QKV makes it 5, so 2 x 32 sums are charged that it does not launch)."""
    prefill = _phase("mistral-7b", "awq-gemm", Generate(1, 2048, 1), "prefill")
    unpack, split = _group(prefill, "dequantize weights"), _group(prefill, "split-K partial outputs")
    linear = _group(prefill, "linear layers")
    assert unpack.flops == pytest.approx(2 * 1.375 * 128 * MISTRAL_7B_LAYERS)
    assert unpack.time_s == pytest.approx(1.375 * 128 * MISTRAL_7B_LAYERS / INT_RATE_4090, rel=1e-9)
    out_elems = 2048 * 32 * (6144 + 4096 + 2 * 14336 + 4096)
    assert split.bytes == pytest.approx(2 * 8 * out_elems * 2)
    assert linear.achieved_tflops == pytest.approx(165.26 * linear.shape_efficiency * 0.43, rel=1e-6)
    assert "MMAs at 0.43 of the matmul ceiling" in linear.formula  # Explain shows why the rate is lower
    # transformers' AWQ linears under eager PyTorch against its generic int4 (no library kernel): the sums only
    awq = _phase("mistral-7b", "awq-gemm", Generate(1, 2048, 1), "prefill", runtime="pytorch-eager")
    plain = _phase("mistral-7b", "int4", Generate(1, 2048, 1), "prefill", runtime="pytorch-eager")
    assert awq.kernels_per_step - plain.kernels_per_step == pytest.approx(7 * 32)
    # the summed unpack: the GEMM's phases are serial within a block (no cp.async, __syncthreads between them)
    assert prefill.gpu_s >= linear.time_s + unpack.time_s + split.time_s


def test_awq_gemm_decode_multiplies_a_whole_16_row_tile_under_its_weight_stream():
    """One token still fills a 16-row MMA tile (the GEMM shape model's smallest tile): at most 1/16 of the tile does
    work, and at 0.43 of the ceiling those MMAs (~3.6 ms) still hide under the ~4.2 ms weight stream; the unpack
    (1.375 x 6.979e9 / 20.66e12 = 0.46 ms) adds to it, the kernel's phases being serial."""
    decode = _phase("mistral-7b", "awq-gemm", Generate(1, 64, 64), "decode")
    linear, unpack = _group(decode, "linear layers"), _group(decode, "dequantize weights")
    assert linear.shape_efficiency <= 1 / 16
    assert linear.compute_s < linear.memory_s and linear.time_s == pytest.approx(linear.memory_s)
    assert unpack.time_s / decode.steps == pytest.approx(1.375 * MISTRAL_7B_LAYERS / INT_RATE_4090, rel=1e-9)
    assert unpack.time_s / decode.steps == pytest.approx(0.46e-3, rel=0.02)
    assert decode.gpu_s >= linear.time_s + unpack.time_s


def test_exllamas_reconstructed_gemm_runs_at_geforces_fp16_accumulate_rate():
    """exllama multiplies a reconstructed 16-bit copy with cublasHgemm, which accumulates in fp16: the RTX 4090 runs
    that at 330.3 TFLOPS against 165.2 with fp32 accumulation (Ada whitepaper, Appendix A), twice its catalog rate;
    the RTX A6000 (workstation GA102) at its full rate either way, so no change there."""
    assert RTX_4090.fp16_accumulate_speedup == pytest.approx(330.3 / 165.2, rel=0.001)
    assert FACTS.catalog.get("rtx-3090").fp16_accumulate_speedup == pytest.approx(142 / 71)  # GA102 whitepaper
    for other in ("rtx-a6000", "h100-sxm", "a100-sxm-80gb", "rtx-5090"):
        assert FACTS.catalog.get(other).fp16_accumulate_speedup == 1.0
    job = Generate(1, 512, 1)  # 512 rows: past exllama's 7-token GEMV, through the reconstruct and cuBLAS
    linear = _group(_phase("llama-2-7b", "gptq-exllama", job, "prefill", runtime="pytorch-eager"), "linear layers")
    assert linear.achieved_tflops == pytest.approx(RTX_4090.ceiling_tflops("fp16") * linear.shape_efficiency * 2.0)
    a6000 = FACTS.catalog.get("rtx-a6000")
    linear = _group(_phase("llama-2-7b", "gptq-exllama", job, "prefill", runtime="pytorch-eager", gpu=a6000),
                    "linear layers")
    assert linear.achieved_tflops == pytest.approx(a6000.ceiling_tflops("fp16") * linear.shape_efficiency)


def test_only_autoawqs_fused_mlp_keeps_the_gemv_for_prompts():
    s = resolve_setup(Plan(load_models().get("llama-2-7b"), Generate(1, 64, 1), "awq-gemv", runtime="autoawq"),
                      FACTS.rules, FACTS.runtimes)
    assert s.mlp_gemv and s.gemv_tokens == 8
    for precision, runtime in (("awq-gemv", "pytorch-eager"), ("awq-gemm", "autoawq"), ("int4", "autoawq")):
        s = resolve_setup(Plan(load_models().get("llama-2-7b"), Generate(1, 64, 1), precision, runtime=runtime),
                          FACTS.rules, FACTS.runtimes)
        assert not s.mlp_gemv


def test_autoawq_rows_run_the_checkpoint_their_id_names_under_the_autoawq_profile():
    rows = [r for r in load_measurements() if r.framework == "autoawq"]
    # AutoAWQ's README (20 decode + 20 prefill), PR #320 and issue #276 (8 GEMM rounds each: a prefill and a decode
    # row), TinyChat's AWQ rows (4 models' decode, 2 models x 6 prompt lengths), oobabooga's two AutoAWQ 0.1.4 files
    # (group 128 and 32: a prompt row and a decode row each), premAI's AutoAWQ cell for each of its 2 models, and
    # zerollama's fused AWQ rows (5 Qwen1.5 sizes: a prompt row and a decode row each)
    assert FRAMEWORK_RUNTIME["autoawq"] == "autoawq" and len(rows) == 40 + 2 * 2 * 8 + 4 + 2 * 6 + 2 * 2 + 2 + 5 * 2
    by_id = [r for r in rows if r.precision == "int4"]  # the id names the kernel version of an int4 row
    assert {awq_precision(r) for r in by_id} == {"awq-gemv", "awq-gemm"}
    assert all(awq_precision(r) == ("awq-gemv" if "-gemv-" in r.id else "awq-gemm") for r in by_id)
    # oobabooga's, premAI's and zerollama's rows state their AWQ checkpoint's precision outright
    assert {r.precision for r in rows if r not in by_id} == {"awq-gemm"} and len(rows) - len(by_id) == 2 * 2 + 2 + 5 * 2
    assert all(awq_precision(r) is None for r in load_measurements() if r.framework != "autoawq")


def test_the_autoawq_runtime_refuses_a_model_that_is_not_an_awq_checkpoint():
    """AutoAWQ's fused modules exist only for its own checkpoints: bf16 under it is refused, naming the runtime and
    what to choose; the same plan with an AWQ checkpoint runs."""
    plan = Plan(load_models().get("llama-2-7b"), Generate(1, 64, 64), "bf16", runtime="autoawq", batch=1)
    e = estimate_gpu(plan, RTX_4090, FACTS)
    blocking = [r for r in e.reasons if r.blocking]
    assert not e.feasible and blocking[0].code == "runtime"
    assert "awq-gemv, awq-gemm" in blocking[0].text and "PyTorch eager" in blocking[0].text
    assert estimate_gpu(replace(plan, precision="awq-gemm"), RTX_4090, FACTS).feasible


def test_llama_cpps_f16_prompt_gemms_run_at_geforces_fp16_accumulate_rate():
    """llama.cpp multiplies F16 weights by a prompt through cublasGemmEx with CUBLAS_COMPUTE_16F: on an RTX 4090 at
    twice its catalog rate (165.2 -> 330.3 TFLOPS, Ada whitepaper), on an RTX 6000 Ada (workstation, the same AD102
    at full fp32-accumulate rate) at its catalog rate; its quantized GGUF formats take MMQ's int8 path instead."""
    job = Generate(1, 512, 1)
    gf = _group(_phase("llama-3-8b", "fp16", job, "prefill", runtime="llama.cpp"), "linear layers")
    eff = FACTS.runtimes.get("llama.cpp").efficiency("gddr").compute_efficiency
    assert gf.achieved_tflops == pytest.approx(RTX_4090.ceiling_tflops("fp16") * eff * gf.shape_efficiency * 2.0)
    ada = FACTS.catalog.get("rtx-6000-ada")
    ws = _group(_phase("llama-3-8b", "fp16", job, "prefill", runtime="llama.cpp", gpu=ada), "linear layers")
    assert ws.achieved_tflops == pytest.approx(ada.ceiling_tflops("fp16") * eff * ws.shape_efficiency)
    q4 = _group(_phase("llama-3-8b", "q4_0", job, "prefill", runtime="llama.cpp"), "linear layers")
    # quantized prompts run MMQ on int8 tensor cores since PR #8075 (tests/engine/test_prompt_gemm.py)
    assert q4.compute_path == "int8"
    assert q4.achieved_tflops == pytest.approx(RTX_4090.ceiling_tflops("int8") * 0.457 * q4.shape_efficiency)
    assert "fp16 accumulation" in gf.formula and "fp16 accumulation" not in q4.formula
    torch = _group(_phase("llama-3-8b", "fp16", job, "prefill", runtime="pytorch-eager"), "linear layers")
    assert torch.achieved_tflops == pytest.approx(RTX_4090.ceiling_tflops("fp16") * torch.shape_efficiency)
