"""Seed-question presets: one per question, each a valid link, each answering what its seed asks."""

import re
from dataclasses import replace
from pathlib import Path

import pytest

from planner.views import plan_inputs, share
from planner.inputs.catalog import load_catalog
from planner.engine.estimate import estimate_all
from planner.views.presets import PRESETS_FILE, load_all, load_presets, parse_link
from planner.base.schema import DataFileError
from planner.inputs.facts import load_facts

FACTS = load_facts()

SEED_README = Path(__file__).resolve().parents[3] / "shared" / "seeds" / "README.md"
PRESETS = {p.id: p for p in load_presets()}


def _ranking(preset_id, **changes):
    p = PRESETS[preset_id]
    inputs = replace(p.inputs, **changes)
    return {e.gpu.id: e for e in estimate_all(plan_inputs.to_plan(inputs, plan_inputs.resolve_model(inputs)), FACTS)}


def test_every_seed_document_has_a_preset_named_for_its_question():
    seeds = {p.seed for p in PRESETS.values()}
    if SEED_README.exists():  # ../shared sits beside the project on developer machines and CI
        listed = set(re.findall(r"\| (\d{3}_[0-9a-f]{16}\.txt) \|", SEED_README.read_text()))
        assert listed and listed <= seeds
    assert len(seeds) == 5
    for p in PRESETS.values():
        assert p.question.endswith("?") and len(p.question) < 140  # a question, short enough for a button


def test_each_preset_is_a_link_that_round_trips():
    for p in PRESETS.values():
        inputs, warnings = share.decode(parse_link(p.link))
        assert warnings == [] and inputs == p.inputs
        again, warnings = share.decode(share.encode(p.inputs))
        assert warnings == [] and again == p.inputs
        assert p.inputs.gpu in load_catalog().ids() + ("",)  # the GPU its question names ('' = which one?)


def test_cfdna_preset_ranks_rentable_gpus_for_a_million_sequences():
    p = PRESETS["cfdna-1m-runpod"]
    assert (p.inputs.seqs, p.inputs.prec, p.inputs.rt, p.inputs.priced) == (1_000_000, "fp16", "torch-compile", True)
    ranked = _ranking(p.id)
    rentable = [e for e in ranked.values() if e.feasible and e.cost() is not None]
    assert len(rentable) >= 10
    # generation is bandwidth-bound here: the seed's central claim, which the estimate must reproduce
    assert all(e.bound == "memory" for e in (ranked["rtx-4090"], ranked["rtx-3090"], ranked["h100-sxm"]))


def test_sea_preset_runs_on_three_a5000():
    p = PRESETS["sea-3x-a5000"]
    e = _ranking(p.id)["rtx-a5000"]
    assert p.inputs.gpus == 3 and p.inputs.batch == 1 and e.feasible
    assert e.memory.total_gb <= e.gpu.vram_gb
    assert any("data parallel" in r.text for r in e.reasons)


def test_betarho_presets_fit_their_gpus():
    reduced = _ranking("betarho-reduced-4070ti-super")["rtx-4070-ti-super"]
    assert reduced.feasible and reduced.batch >= 1 and PRESETS["betarho-reduced-4070ti-super"].inputs.ckpt
    full = _ranking("betarho-full-a100-40gb")["a100-sxm-40gb"]
    # The seed's A100 config, batch 16 at 500 nt, does not fit (data/models_generic.yaml derivation): per sample
    # L^2 x 4913 + L x 28680 saved elements at L = 500 (the profile's constants: 35 + 4 x 835 + 194 + 4 x 336 per pair;
    # 4 x 24 x 128 + 4 x 9.5 x 384 + 1800 per residue) = 1.2426e9 elements x 2.25 B (autocast mix) = 2.796 GB.
    per_sample = (500**2 * 4913 + 500 * 28680) * 2.25 / 1e9
    usable = 0.9 * 40 * 2**30 / 1e9  # 38.65 GB
    fixed = 1_880_038 * (4 + 2 + 4 + 8) / 1e9 + 0.5  # fp32 master + bf16 copy + grads + AdamW, CUDA context
    assert not full.feasible and full.memory.total_gb == pytest.approx(16 * per_sample + fixed, rel=1e-3)
    assert int((usable - fixed) // per_sample) == 13  # the largest batch that fits, by hand
    auto = _ranking("betarho-full-a100-40gb", batch=None)["a100-sxm-40gb"]
    assert auto.feasible and auto.max_batch == 13


def test_betarho_reduced_batch_on_a_4070_ti_super_is_what_its_fp32_checkpoints_allow():
    """Seed 001's reduced config, 200 nt, bf16 autocast, checkpointing, RTX 4070 Ti Super (16 GiB). Per residue pair
    at the peak (the last transformer block's backward, examples/models/betarho.py by hand, as in
    tests/inputs/test_models.py): the checkpointed fp32 pair stream and inputs 656 B + the recomputed block 2,648 B
    = 3,304 B; per residue 13,480 B. Per sample 200^2 x 3,304 + 200 x 13,480 = 134.86 MB. Usable 0.9 x 16 x 2^30 B
    = 15.462 GB; fixed 0.5 GB CUDA context + 1,067,338 params x (4 + 2 + 4 + 8) B = 0.519 GB; (15.462 - 0.519) /
    0.13486 = 110.8: 110 fit, and 5000 samples in 46 passes of 109. The derivation's range: 99 (if the IPA's
    gradient sum were not in place: 3,688 B per pair) to 112 (per-residue tensors all 16-bit). The planner used to
    price everything at 2.25 B and leave out the IPA's kept z: 2,214 B per pair, batch 152, out of memory."""
    e = _ranking("betarho-reduced-4070ti-super")["rtx-4070-ti-super"]
    per_sample = (200**2 * 3304 + 200 * 13_480) / 1e9
    usable, fixed = 0.9 * 16 * 2**30 / 1e9, 0.5 + 1_067_338 * 18 / 1e9
    assert int((usable - fixed) // per_sample) == 110 == e.max_batch
    assert e.feasible and 99 <= e.batch <= 112 and e.batch != 152
    assert e.memory.total_gb == pytest.approx(fixed + e.batch * per_sample, rel=1e-3)


def test_rtx_5090_preset_carries_the_pytorch_build_requirement():
    e = _ranking("llm-7b-fp16-rtx-5090")["rtx-5090"]
    # sm_120 kernels first shipped in the CUDA 12.8 builds of PyTorch 2.7 (moi90 table: 2.7.0 cuda12.8 lists sm_120)
    assert e.feasible and any(r.code == "pytorch_build" and "2.7.0+cu128" in r.text for r in e.reasons)
    assert e.tokens_per_s and e.plan.workload.gen_tokens == 100


def test_sea_preset_pins_the_seeds_pytorch_and_it_runs_the_three_gpus():
    p = PRESETS["sea-3x-a5000"]
    assert p.inputs.pt == "1.13.1+cu116"  # the seed's environment: 'PyTorch 1.13.1+cu116, CUDA 11.6'
    ranked = _ranking(p.id)
    # A5000 and A6000 are sm_86, V100 sm_70: all in 1.13.1+cu116's list (sm_37 ... sm_86)
    for gid in ("rtx-a5000", "rtx-a6000", "v100-sxm2-32gb"):
        assert not any(r.code == "pytorch_build" and r.blocking for r in ranked[gid].reasons), gid


def test_neuromanifold_preset_splits_gpus_at_sm80():
    ranked = _ranking("neuromanifold-attention-1024")
    for e in ranked.values():
        if e.gpu.compute_capability is None:
            continue
        blocked = any(r.code == "attention" and r.blocking for r in e.reasons)
        # FlashAttention-2 README: Ampere, Ada or Hopper (SM80-SM90); 2.7.3+ on SM100 (B200/GB200: TE's
        # version_required_blackwell); no Turing/Volta, no SM103 or GeForce Blackwell (SM120) source
        assert blocked == (not (8, 0) <= e.gpu.compute_capability <= (10, 0)), e.gpu.id


def test_a_broken_preset_is_named_and_the_rest_still_load(tmp_path):
    text = PRESETS_FILE.read_text()
    broken = text.replace("model=cfdna-gen&job=generate", "model=cfdna-gen&job=generate&kv=fp4", 1)
    assert broken != text
    path = tmp_path / "presets.yaml"
    path.write_text(broken)
    good, bad = load_all(path)
    assert len(good) == len(PRESETS) - 1 and len(bad) == 1
    assert bad[0].record == "'cfdna-1m-runpod'" and bad[0].field == "link" and "'kv'" in str(bad[0])
    with pytest.raises(DataFileError, match="kv"):
        load_presets(path)


def test_unknown_preset_field_is_refused(tmp_path):
    path = tmp_path / "presets.yaml"
    path.write_text(PRESETS_FILE.read_text().replace("    seed: 003", "    sede: 003", 1))
    _, bad = load_all(path)
    assert bad and bad[0].field == "sede" and "did you mean 'seed'" in str(bad[0])
