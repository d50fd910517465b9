"""Runtimes' own one-shot / two-shot all-reduce over NVLink (data/custom_allreduce.yaml,
planner/engine/collectives.py custom_allreduce_seconds), against the published per-size table it was read from and
NCCL's ring."""

from dataclasses import replace

import pytest

from planner.engine.collectives import allreduce_seconds, custom_allreduce_seconds, custom_link
from planner.base.schema import DataFileError
from planner.inputs.catalog import load_catalog
from planner.inputs.custom_allreduce import load_custom_allreduce
from planner.engine.estimate import estimate_all
from planner.engine.plan import Plan
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models
from planner.inputs.runtimes import load_runtimes, opted_in

CUSTOM = load_custom_allreduce()
H100 = load_catalog().get("h100-sxm")
KIB, MIB = 1024, 1024 * 1024
# SGLang PR #2904 (2025-01-15), 'custom allreduce' on H100 without CUDA graphs, us for tp 2/4/8; the test's sizes are
# float32 elements (sgl-kernel/tests/test_trt_reduce.py), so 512 elements = 2 KiB
PR2904 = {2 * KIB: (3.7, 4.8, 5.9), 16 * KIB: (3.9, 3.7, 5.7), 128 * KIB: (4.5, 4.8, 7.8),
          1 * MIB: (7.9, 13.9, 16.7), 2 * MIB: (12.5, 20.2, 22.1), 4 * MIB: (19.9, 31.1, 33.8)}


def test_the_kernel_terms_reproduce_the_published_table():
    """The bandwidth-bound sizes (1-4 MiB) within 5 %; below them within 30 %: the worst are tp 4 at 16 KiB (+29 %,
    a figure below the same table's 2 KiB one, the host loop's noise) and at 128 KiB (+27 %), and tp 8 at 128 KiB
    (+19 %): reading from several peers at once moves more than the one peer of tp 2 that the bandwidth share was
    read from, which the model leaves out (it errs slow there)."""
    for size, measured in PR2904.items():
        for n, us in zip((2, 4, 8), measured):
            link = H100.link_for(n)
            model_us = custom_allreduce_seconds(CUSTOM["vllm"], size, n, link)[0] * 1e6
            assert model_us == pytest.approx(us, rel=0.30 if size < MIB else 0.05), (size, n)


def test_one_shot_by_hand_and_the_switch_to_two_shot():
    """8 H100s, 16 KiB: one-shot, 3.7 + 7 x 0.3 us + 7 x 16,384 B at 0.58 x 450 GB/s = 5.8 + 114688 / 261e3 =
    6.239418 us. 1 MiB: two-shot (256 KiB and above on 8 GPUs), 7.2 + 7 x 0.48 us + 2 x 7/8 x 1,048,576 B at
    0.66 x 450 GB/s = 10.56 + 1835008 / 297e3 = 16.738478 us. 2 GPUs stay one-shot at any size below 8 MiB."""
    ar, link = CUSTOM["vllm"], H100.link_for(8)
    seconds, kernel = custom_allreduce_seconds(ar, 16 * KIB, 8, link)
    assert kernel.id == "one-shot" and seconds == pytest.approx(6.239418e-6, rel=1e-6)
    seconds, kernel = custom_allreduce_seconds(ar, MIB, 8, link)
    assert kernel.id == "two-shot" and seconds == pytest.approx(16.738478e-6, rel=1e-6)
    assert ar.kernel(256 * KIB - 1, 8).id == "one-shot" and ar.kernel(256 * KIB, 8).id == "two-shot"
    assert ar.kernel(511 * KIB, 4).id == "one-shot" and ar.kernel(512 * KIB, 4).id == "two-shot"
    assert ar.kernel(6 * MIB, 2).id == "one-shot"


def test_about_twice_as_fast_as_nccls_ring_at_16_kib():
    """The issue's figure: at 16 KiB over 8 H100s NCCL's ring (LL, 6.6 + 14 x 0.6 us) takes ~15 us, the custom
    kernel ~6: 2.4x."""
    link = H100.link_for(8)
    ratio = allreduce_seconds(16 * KIB, 8, link) / custom_allreduce_seconds(CUSTOM["vllm"], 16 * KIB, 8, link)[0]
    assert 2.0 < ratio < 3.0


def test_which_runtimes_counts_sizes_and_links_take_it():
    runtimes = load_runtimes()
    vllm = runtimes.get("vllm").custom_allreduce
    assert runtimes.get("tensorrt-llm").custom_allreduce is not None
    assert runtimes.get("pytorch-eager").custom_allreduce is None and runtimes.get("llama.cpp").custom_allreduce is None
    assert vllm.takes(8 * MIB - 1, 8) and not vllm.takes(8 * MIB, 8)  # vLLM: below max_size, else NCCL
    assert not vllm.takes(16 * KIB, 3)  # world sizes 2, 4, 6, 8 only
    assert custom_link(H100.link_for(8))
    assert not custom_link(load_catalog().get("rtx-4090").link_for(2))  # PCIe: NCCL
    assert not custom_link(H100.link_for(16))  # across nodes: NCCL


def test_a_malformed_file_names_the_record_and_field(tmp_path):
    text = (load_custom_allreduce.__defaults__[0]).read_text()
    bad = tmp_path / "custom_allreduce.yaml"
    bad.write_text(text.replace('one_shot_below_bytes: {"2": 8388608', 'one_shot_below_bytes: {"two": 8388608', 1))
    with pytest.raises(DataFileError, match=r"'vllm'.*one_shot_below_bytes.*gpus.*GPU count"):
        load_custom_allreduce(bad)
    bad.write_text(text.replace("link_share: 0.58", "link_share: 5.8", 1))
    with pytest.raises(DataFileError, match=r"'one-shot'.*link_share"):
        load_custom_allreduce(bad)


def test_pytorchs_intra_node_all_reduce_is_planned_only_when_switched_on():
    """gpt-fast's tensor parallel sets ENABLE_INTRA_NODE_COMM=1 (its README), so c10d all-reduces bf16 messages up to
    256 KiB in PyTorch's one-shot kernel; a torch.compile plan without the switch goes through NCCL. Llama-2-7B
    (hidden 4096, 32 layers) over 8 A100-SXM4-80GB (NVLink 300 GB/s one way), batch 1, per decode step: 64
    all-reduces of 4096 x 2 = 8,192 B (the LM head stays whole on every GPU under gpt-fast's tp.py: no logits
    all-gather). Switched on, one-shot: 3.7 + 7 x 0.3 + 7 x 8192 / (0.58 x 300e3 B/us) = 5.8 + 0.329563 = 6.129563
    us each, 392.292 us a step. NCCL: LL, 6.6 us + 14 hops x (0.6 + 1.28 on A100) us + 2 x 7/8 x 8192 B / 87.7e3 B/us
    = 33.083466 us each, 2117.342 us a step."""
    facts = load_facts()
    plan = Plan(load_models().get("llama-2-7b"), Generate(1, 5, 200), "bf16", batch=1, gpus=8, parallel="tensor",
                runtime="torch-compile")

    def per_step(runtimes):
        e = estimate_all(plan, replace(facts, runtimes=runtimes), gpu_names=["a100-sxm-80gb"])[0]
        decode = next(ph for ph in e.phases if ph.name == "decode")
        return decode.comm_s / decode.steps

    assert facts.runtimes.get("torch-compile").custom_allreduce.opt_in == "ENABLE_INTRA_NODE_COMM=1"
    assert facts.runtimes.get("torch-compile").planned_allreduce is None
    assert per_step(facts.runtimes) == pytest.approx(2117.342e-6, rel=1e-5)
    assert per_step(opted_in(facts.runtimes)) == pytest.approx(392.292e-6, rel=1e-5)
    assert opted_in(facts.runtimes).get("vllm").planned_allreduce == facts.runtimes.get("vllm").planned_allreduce
