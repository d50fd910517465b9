"""llama.cpp's choice of prompt GEMM by tokens per pass on Volta (data/runtimes.yaml llama.cpp prompt_gemm
cublas-fp16-mmq-small, PromptPath.small_path): ggml_cuda_should_use_mmq returns '!fp16_mma_hardware_available(cc) ||
ne11 < MMQ_DP4A_MAX_BATCH_SIZE' (64), so a V100 multiplies quantized weights by 9-63 tokens in MMQ's dp4a kernels on
the stored blocks and by 64 or more through an fp16 copy for cuBLAS."""

from dataclasses import replace

import pytest

from planner.base.schema import DataFileError, Record
from planner.engine.estimate import estimate_gpu
from planner.engine.plan import Plan, resolve_setup
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models
from planner.inputs.prompt_gemm import parse_prompt_gemm
from planner.inputs.runtimes import with_build

FACTS = load_facts()
LLAMA_CPP = FACTS.runtimes.get("llama.cpp")
# Llama-2-7B's weights a GGUF file quantizes: 32 layers x (4 x 4096^2 + 3 x 4096 x 11008) + the 32000 x 4096 output
LLAMA2_7B_WEIGHTS = 32 * (4 * 4096 ** 2 + 3 * 4096 * 11008) + 32000 * 4096  # 6,607,077,376
Q8_0_BYTES = 34 / 32  # a block of 32 int8 values and one fp16 scale


@pytest.mark.parametrize("rows, path", [
    (9, "mmq-dp4a"), (16, "mmq-dp4a"), (63, "mmq-dp4a"),  # ne11 < 64: MMQ
    (64, "cublas-fp16-mmq-small"), (512, "cublas-fp16-mmq-small"),  # FP16 cuBLAS over a dequantized copy
])
def test_a_v100_pass_takes_mmq_below_64_tokens(rows, path):
    p = LLAMA_CPP.at_build(4753).prompt_era.path_on((7, 0), "quantized")
    assert p.for_rows(rows).id == path


def test_f16_weights_and_other_gpus_keep_one_path():
    era = LLAMA_CPP.at_build(4753).prompt_era
    assert era.path_on((7, 0), "f16").for_rows(16).id == "cublas-fp16"  # F16 has no MMQ
    assert era.path_on((8, 0), "quantized").for_rows(16).id == "mmq-int8"  # int8 MMA: MMQ at every size
    assert LLAMA_CPP.at_build(2843).prompt_era.path_on((7, 0), "quantized").for_rows(16).id == "cublas-fp16"


def _prefill(prompt: int):
    """Llama-2-7B Q8_0's prefill of one `prompt`-token pass on a V100 PCIe at build 4753."""
    runtimes = with_build(FACTS.runtimes, "llama.cpp", 4753)
    plan = Plan(load_models().get("llama-2-7b"), Generate(1, prompt, 1), "q8_0", attention="manual",
                runtime="llama.cpp", batch=1)
    e = estimate_gpu(plan, FACTS.catalog.get("v100-pcie-16gb"), replace(FACTS, runtimes=runtimes),
                     setup=resolve_setup(plan, FACTS.rules, runtimes))
    return next(p for p in e.phases if p.name == "prefill")


def test_a_16_token_pass_reads_the_blocks_once_and_a_64_token_pass_writes_an_fp16_copy():
    """16 tokens: MMQ on the stored blocks, no copy, the MMAs as dp4a on the integer ALU. 64 tokens: every weight
    dequantized into fp16 first, reading its 1.0625 B and writing 2 B: 6,607,077,376 x 3.0625 = 20.23 GB."""
    small = _prefill(16)
    assert not any(g.name == "dequantize weights" for g in small.groups)
    assert next(g for g in small.groups if g.name == "linear layers").compute_path == "int32"
    large = _prefill(64)
    copy = next(g for g in large.groups if g.name == "dequantize weights")
    assert copy.bytes == pytest.approx(LLAMA2_7B_WEIGHTS * (Q8_0_BYTES + 2.0))
    assert next(g for g in large.groups if g.name == "linear layers").compute_path == "fp16"


def _block(small_pass) -> Record:
    paths = [{"id": "a", "compute_path": "fp16", "small_pass": small_pass, "source": "s"},
             {"id": "b", "compute_path": "fp16", "source": "s"}]
    eras = [{"from_build": 0, "quantized": {"7.0": "a"}, "f16": {"7.0": "b"}, "source": "s"}]
    return Record.of("runtimes.yaml", 0, {"id": "x", "prompt_gemm": {"paths": paths, "eras": eras}})


@pytest.mark.parametrize("small_pass, words", [
    ({"max_tokens": 63, "path": "nope"}, "got 'nope'"),
    ({"max_tokens": 63, "path": "a"}, "got 'a'"),  # a path that has a small pass of its own
    ({"max_tokens": 0, "path": "b"}, "max_tokens"),
    ({"path": "b"}, "max_tokens"),
    ({"max_tokens": 63, "path": "b", "extra": 1}, "extra"),
])
def test_a_broken_small_pass_names_its_field(small_pass, words):
    with pytest.raises(DataFileError, match=words):
        parse_prompt_gemm(_block(small_pass))
